"""Small durable text files in Kafka's formats, written atomically.

Contract:
- :func:`atomic_write` writes ``path.tmp``, fsyncs it, renames it over ``path`` and fsyncs the
  directory, so a reader sees the old file or the new one, never a mix (Kafka's
  ``CheckpointFile``). Stray ``*.tmp`` files are garbage from a crash and may be deleted.
- Offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``replication-offset-checkpoint``): ``0\\n<count>\\n<topic> <partition> <offset>\\n...``.
- ``leader-epoch-checkpoint``: ``0\\n<count>\\n<epoch> <start_offset>\\n...``.
- ``partition.metadata``: ``version: 0\\ntopic_id: <uuid in Kafka's base64>\\n``.
- Readers raise :class:`CheckpointError` (a ``ValueError``) on a malformed file; a missing file
  is the caller's business (``FileNotFoundError``).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping

CHECKPOINT_VERSION = 0


class CheckpointError(ValueError):
    """A checkpoint file that does not parse."""


def fsync_dir(path: str) -> None:
    """Make a rename or creation inside directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` durably (tmp file + fsync + rename + dir fsync)."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def _read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: missing version or count line")
    try:
        version = int(lines[0])
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: bad version or count line") from None
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: unrecognised version {version}")
    entries = [line for line in lines[2:] if line.strip()]
    if count != len(entries):
        raise CheckpointError(f"{path}: expected {count} entries, found {len(entries)}")
    return entries


def write_offset_checkpoint(path: str, offsets: Mapping[tuple[str, int], int]) -> None:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    atomic_write(path, ("\n".join(lines) + "\n").encode())


def read_offset_checkpoint(path: str) -> dict[tuple[str, int], int]:
    result: dict[tuple[str, int], int] = {}
    for line in _read_lines(path):
        parts = line.split(" ")
        if len(parts) != 3:
            raise CheckpointError(f"{path}: malformed entry {line!r}")
        try:
            result[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise CheckpointError(f"{path}: malformed entry {line!r}") from None
    return result


def write_epoch_checkpoint(path: str, entries: Iterable[tuple[int, int]]) -> None:
    items = list(entries)
    lines = [str(CHECKPOINT_VERSION), str(len(items))]
    lines += [f"{epoch} {start}" for epoch, start in items]
    atomic_write(path, ("\n".join(lines) + "\n").encode())


def read_epoch_checkpoint(path: str) -> list[tuple[int, int]]:
    result: list[tuple[int, int]] = []
    for line in _read_lines(path):
        parts = line.split()
        if len(parts) != 2:
            raise CheckpointError(f"{path}: malformed entry {line!r}")
        try:
            result.append((int(parts[0]), int(parts[1])))
        except ValueError:
            raise CheckpointError(f"{path}: malformed entry {line!r}") from None
    return result


def uuid_to_kafka_string(uuid: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    if len(uuid) != 16:
        raise ValueError(f"a topic id is 16 bytes, got {len(uuid)}")
    return base64.urlsafe_b64encode(uuid).decode().rstrip("=")


def kafka_string_to_uuid(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise CheckpointError(f"bad topic id {text!r}") from None
    if len(raw) != 16:
        raise CheckpointError(f"bad topic id {text!r}")
    return raw


def write_partition_metadata(path: str, topic_id: bytes) -> None:
    text = f"version: 0\ntopic_id: {uuid_to_kafka_string(topic_id)}\n"
    atomic_write(path, text.encode())


def read_partition_metadata(path: str) -> bytes:
    with open(path, encoding="utf-8") as f:
        fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    if fields.get("version", "").strip() != "0" or "topic_id" not in fields:
        raise CheckpointError(f"{path}: malformed partition metadata")
    return kafka_string_to_uuid(fields["topic_id"].strip())
