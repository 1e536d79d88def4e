"""Kafka's 128-bit identifiers (``org.apache.kafka.common.Uuid``) as 16 raw bytes.

Kafka prints a Uuid as URL-safe base64 without padding: always 22 characters. Two values are
reserved and never handed out: the zero uuid (``AAAAAAAAAAAAAAAAAAAAAA``, "no id") and the one
uuid (``AAAAAAAAAAAAAAAAAAAAAQ``, the topic id of ``__cluster_metadata``). Random ids whose text
starts with ``-`` are also skipped so they can never be mistaken for a command-line flag.
"""

from __future__ import annotations

import base64
import binascii
import os

ZERO_UUID = b"\x00" * 16
ONE_UUID = b"\x00" * 15 + b"\x01"
METADATA_TOPIC_ID = ONE_UUID
RESERVED_UUIDS = frozenset({ZERO_UUID, ONE_UUID})


def uuid_to_str(raw: bytes) -> str:
    """The 22-character form Kafka prints (base64url, no padding)."""
    if len(raw) != 16:
        raise ValueError(f"a uuid has 16 bytes, got {len(raw)}")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> bytes:
    """Parse Kafka's text form; ``ValueError`` says why a string is not a uuid."""
    if len(text) != 22:
        raise ValueError(
            f"{text!r} is not a Kafka uuid: expected 22 base64url characters, got {len(text)}"
        )
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{text!r} is not a Kafka uuid: not base64url ({exc})") from None
    if uuid_to_str(raw) != text or "+" in text or "/" in text:
        raise ValueError(f"{text!r} is not a Kafka uuid: not canonical base64url")
    return raw


def random_uuid_bytes() -> bytes:
    """A fresh random uuid that is neither reserved nor prints with a leading ``-``."""
    while True:
        raw = os.urandom(16)
        if raw not in RESERVED_UUIDS and not uuid_to_str(raw).startswith("-"):
            return raw


def random_uuid() -> str:
    return uuid_to_str(random_uuid_bytes())
