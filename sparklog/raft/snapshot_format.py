"""The content of a KRaft snapshot: record batches framed by a header and a footer.

Layout (Kafka's ``RecordsSnapshotWriter``): batches whose offsets start at 0 inside the
snapshot and whose partition leader epoch is the snapshot's epoch.

1. A control batch holding ``SnapshotHeaderRecord`` (with the timestamp of the last record
   the snapshot contains) and, when ``kraft.version`` >= 1, ``KRaftVersionRecord`` and the
   ``VotersRecord`` in force at the snapshot's end offset (KIP-853: once segments below a
   snapshot are deleted, the snapshot is where a replica learns the voter set).
2. Data batches with the state machine's records (for the metadata log, an image written as
   records), at most ``max_batch_bytes`` each.
3. A control batch holding ``SnapshotFooterRecord``.

:func:`parse_snapshot` checks every CRC, that the header comes first, the footer last, and that
nothing follows the footer; any other shape raises :class:`SnapshotFormatError` (a truncated
download, a corrupt file), never another exception.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sparklog.protocol.errors import KafkaApiError
from sparklog.protocol.record_codec import RecordInput, build_batch, decode_batch
from sparklog.protocol.records import iter_batches
from sparklog.raft.control_records import decode_control_record, encode_control_record
from sparklog.raft.snapshots import SnapshotId
from sparklog.raft.voters import VoterSet

DEFAULT_MAX_BATCH_BYTES = 1 << 20
# Per-record framing overhead is at most ~20 bytes; this keeps a batch near the target size.
_RECORD_OVERHEAD = 24


class SnapshotFormatError(ValueError):
    """Bytes that are not a complete, well-formed snapshot."""


@dataclass(frozen=True, slots=True)
class SnapshotContents:
    snapshot_id: SnapshotId
    last_contained_timestamp: int
    kraft_version: int | None
    voters: VoterSet | None
    records: tuple[bytes, ...]
    size_in_bytes: int


def build_snapshot(
    snapshot_id: SnapshotId,
    values: Iterable[bytes],
    *,
    last_contained_timestamp: int,
    kraft_version: int = 0,
    voters: VoterSet | None = None,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> bytes:
    """The bytes of a snapshot holding ``values`` (record values, keys null)."""
    epoch = snapshot_id.epoch
    ts = last_contained_timestamp
    out: list[bytes] = []
    next_offset = 0

    def control(records: list[tuple[str, dict[str, Any]]]) -> None:
        nonlocal next_offset
        inputs = []
        for name, data in records:
            key, value = encode_control_record(name, data)
            inputs.append(RecordInput(key, value, timestamp=ts))
        out.append(
            build_batch(
                inputs, base_offset=next_offset, partition_leader_epoch=epoch, is_control=True
            )
        )
        next_offset += len(inputs)

    header: list[tuple[str, dict[str, Any]]] = [
        ("SnapshotHeaderRecord", {"last_contained_log_timestamp": ts})
    ]
    if kraft_version >= 1 and voters is not None and voters.voters:
        header.append(("KRaftVersionRecord", {"kraft_version": kraft_version}))
        header.append(("VotersRecord", voters.to_record()))
    control(header)
    pending: list[RecordInput] = []
    pending_bytes = 0

    def flush_data() -> None:
        nonlocal next_offset, pending_bytes
        if pending:
            out.append(build_batch(pending, base_offset=next_offset, partition_leader_epoch=epoch))
            next_offset += len(pending)
            pending.clear()
            pending_bytes = 0

    for value in values:
        size = len(value) + _RECORD_OVERHEAD
        if pending and pending_bytes + size > max_batch_bytes:
            flush_data()
        pending.append(RecordInput(None, value, timestamp=ts))
        pending_bytes += size
    flush_data()
    control([("SnapshotFooterRecord", {})])
    return b"".join(out)


def parse_snapshot(snapshot_id: SnapshotId, data: bytes) -> SnapshotContents:
    """Read and check a whole snapshot (see the module rules)."""
    try:
        return _parse(snapshot_id, data)
    except SnapshotFormatError:
        raise
    except (ValueError, KafkaApiError) as exc:  # CorruptRecordError, bad control records
        raise SnapshotFormatError(f"snapshot {snapshot_id} is corrupt: {exc}") from exc


def _parse(snapshot_id: SnapshotId, data: bytes) -> SnapshotContents:
    values: list[bytes] = []
    timestamp: int | None = None
    kraft_version: int | None = None
    voters: VoterSet | None = None
    footer_at = -1
    end = 0
    for index, (pos, header) in enumerate(iter_batches(data)):
        if footer_at >= 0:
            raise SnapshotFormatError(f"snapshot {snapshot_id} has data after its footer")
        _, records = decode_batch(data, pos)
        end = pos + header.size_in_bytes
        if not header.is_control:
            if timestamp is None:
                raise SnapshotFormatError(f"snapshot {snapshot_id} does not start with a header")
            values.extend(r.value or b"" for r in records)
            continue
        for record in records:
            control = decode_control_record(record.key, record.value)
            if control is None:
                continue
            if control.name == "SnapshotHeaderRecord":
                if index != 0:
                    raise SnapshotFormatError(f"snapshot {snapshot_id}: header not first")
                timestamp = int(control.data["last_contained_log_timestamp"])
            elif control.name == "SnapshotFooterRecord":
                footer_at = index
            elif control.name == "KRaftVersionRecord":
                kraft_version = int(control.data["kraft_version"])
            elif control.name == "VotersRecord":
                voters = VoterSet.from_record(control.data)
        if timestamp is None:
            raise SnapshotFormatError(f"snapshot {snapshot_id} does not start with a header")
    if end != len(data):
        raise SnapshotFormatError(
            f"snapshot {snapshot_id} has {len(data) - end} trailing bytes that are no batch"
        )
    if timestamp is None or footer_at < 0:
        raise SnapshotFormatError(f"snapshot {snapshot_id} lacks its header or footer")
    return SnapshotContents(snapshot_id, timestamp, kraft_version, voters, tuple(values), len(data))
