"""``sparklog storage format --add-scram`` (KIP-900): SCRAM credentials in the bootstrap records.

Contract (Kafka's ScramParser): each argument reads ``<MECHANISM>=[key=value,...]`` with
MECHANISM SCRAM-SHA-256 or SCRAM-SHA-512 and keys ``name`` (required), then either
``password`` or ``salt`` + ``saltedpassword`` (both base64), and optionally ``iterations``
(4096..16384, default 4096). Values may be double-quoted. Each becomes one
UserScramCredentialRecord; the password never leaves this process. Errors are ``ValueError``
whose message names the argument's user and problem, never the password.

The records belong to the metadata log's bootstrap (next to :mod:`sparklog.metadata.bootstrap`);
the credential arithmetic is :mod:`sparklog.security.scram`'s.
"""

from __future__ import annotations

import base64
import binascii
import re

from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    credential_from_salted_password,
    make_credential,
)

_ARGUMENT = re.compile(r"\s*(?P<mechanism>[A-Z0-9-]+)\s*=\s*\[(?P<body>.*)\]\s*", re.DOTALL)
_PAIR = re.compile(r'\s*(?P<key>[a-z]+)\s*=\s*(?:"(?P<quoted>[^"]*)"|(?P<bare>[^,]*))\s*(?:,|$)')


def _pairs(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    position = 0
    while position < len(body):
        match = _PAIR.match(body, position)
        if match is None or match.end() == position:
            raise ValueError("expected key=value pairs inside [...]")
        value = match["quoted"] if match["quoted"] is not None else match["bare"].strip()
        out[match["key"]] = value
        position = match.end()
    return out


def scram_record(argument: str) -> MetadataRecord:
    match = _ARGUMENT.fullmatch(argument)
    if match is None:
        raise ValueError("--add-scram must read 'SCRAM-SHA-256=[name=alice,password=alice-secret]'")
    mechanism = match["mechanism"]
    if mechanism not in MECHANISM_TYPES:
        raise ValueError(
            f"--add-scram: unsupported mechanism {mechanism} (use SCRAM-SHA-256 or SCRAM-SHA-512)"
        )
    pairs = _pairs(match["body"])
    unknown = set(pairs) - {"name", "password", "salt", "saltedpassword", "iterations"}
    if unknown:
        raise ValueError(f"--add-scram: unknown key(s) {', '.join(sorted(unknown))}")
    name = pairs.get("name", "")
    if not name:
        raise ValueError("--add-scram: you must supply 'name' to add-scram")
    raw_iterations = pairs.get("iterations", str(MIN_ITERATIONS))
    iterations = int(raw_iterations) if raw_iterations.isdigit() else -1
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"--add-scram for {name}: iterations must be between {MIN_ITERATIONS} and "
            f"{MAX_ITERATIONS}"
        )
    if "password" in pairs:
        if "salt" in pairs or "saltedpassword" in pairs:
            raise ValueError(f"--add-scram for {name}: give password, or salt and saltedpassword")
        credential = make_credential(mechanism, pairs["password"], iterations=iterations)
    elif "salt" in pairs and "saltedpassword" in pairs:
        try:
            salt = base64.b64decode(pairs["salt"], validate=True)
            salted = base64.b64decode(pairs["saltedpassword"], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(
                f"--add-scram for {name}: salt and saltedpassword must be base64"
            ) from None
        credential = credential_from_salted_password(mechanism, salted, salt, iterations)
    else:
        raise ValueError(
            f"--add-scram for {name}: you must supply password, or salt and saltedpassword"
        )
    return make_record(
        "UserScramCredentialRecord",
        {
            "name": name,
            "mechanism": MECHANISM_TYPES[mechanism],
            "salt": credential.salt,
            "stored_key": credential.stored_key,
            "server_key": credential.server_key,
            "iterations": credential.iterations,
        },
    )
