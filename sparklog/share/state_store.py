"""The share coordinator's state of share-partitions, and the records of ``__share_group_state``
it is kept in (KIP-932), sans-IO.

Records are Kafka 4.2's: the key is an int16 version then ``(group id, topic id, partition)`` -
version 0 for a ShareSnapshot, 1 for a ShareUpdate; the value an int16 version (0) then the
snapshot (int32 snapshot epoch, state epoch, leader epoch, start offset, create and write
timestamps, state batches) or the update (int32 snapshot epoch, leader epoch, start offset,
state batches), both with the tagged field 0, ``DeliveryCompleteCount`` (KIP-1226; -1, not set,
is not written). A null value (a tombstone) deletes the state. The create timestamp is when the
share-partition's state was first written or initialized, the write timestamp when the
snapshot was (the store's ``clock``, milliseconds).

Rules kept here:

- A write carries the share-partition's whole window (start offset and state batches), so an
  update replaces the state it follows; every ``updates_per_snapshot`` updates of a key (and the
  first write) go out as a snapshot instead, so a replay never depends on more than the records
  since the last snapshot.
- The delivery complete count is what the share-partition leader wrote (WriteShareGroupState
  v1; -1 from a v0 write), as Kafka's share coordinator keeps it; initializing a start offset
  (AlterShareGroupOffsets) sets it to 0, as Kafka does since KAFKA-20034.
- A write or read naming a leader epoch older than the highest seen for its key is
  FENCED_LEADER_EPOCH: a deposed leader can never overwrite its successor's state. A write
  naming another state epoch than the current one is FENCED_STATE_EPOCH.
- Replaying the records in log order gives back exactly the state the writes produced, and
  every record below :meth:`ShareStateStore.redundant_before` (the oldest of the keys' latest
  snapshots) can be deleted without changing what a replay gives.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sparklog.protocol.codec import decode_from, encode_bytes
from sparklog.protocol.errors import ErrorCode, ProtocolError
from sparklog.protocol.schema import array, message
from sparklog.protocol.schema import field as schema_field
from sparklog.protocol.types import Reader

SNAPSHOT_KEY_VERSION = 0
UPDATE_KEY_VERSION = 1
VALUE_VERSION = 0

_KEY = message(
    "ShareStateKey",
    "0-1",
    "none",
    schema_field("group_id", "string"),
    schema_field("topic_id", "uuid"),
    schema_field("partition", "int32"),
)
_BATCHES = array(
    "state_batches",
    schema_field("first_offset", "int64"),
    schema_field("last_offset", "int64"),
    schema_field("delivery_state", "int8"),
    schema_field("delivery_count", "int16"),
)
# Kafka 4.2 (KIP-1226): ShareSnapshotValue/ShareUpdateValue tagged field 0, default -1.
_DELIVERY_COMPLETE_COUNT = schema_field("delivery_complete_count", "int32", tag=0, default=-1)
_SNAPSHOT_VALUE = message(
    "ShareSnapshotValue",
    "0",
    "0+",
    schema_field("snapshot_epoch", "int32"),
    schema_field("state_epoch", "int32"),
    schema_field("leader_epoch", "int32"),
    schema_field("start_offset", "int64"),
    _DELIVERY_COMPLETE_COUNT,
    schema_field("create_timestamp", "int64"),
    schema_field("write_timestamp", "int64"),
    _BATCHES,
)
_UPDATE_VALUE = message(
    "ShareUpdateValue",
    "0",
    "0+",
    schema_field("snapshot_epoch", "int32"),
    schema_field("leader_epoch", "int32"),
    schema_field("start_offset", "int64"),
    _DELIVERY_COMPLETE_COUNT,
    _BATCHES,
)
_VERSION = struct.Struct(">h")

StateKey = tuple[str, bytes, int]  # (group id, topic id, partition)
Batch = tuple[int, int, int, int]  # (first offset, last offset, delivery state, delivery count)


class ShareRecordError(ValueError):
    """A record of ``__share_group_state`` that cannot be decoded."""


@dataclass(frozen=True, slots=True)
class ShareState:
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[Batch, ...] = ()
    snapshot_epoch: int = 0
    # KIP-1226: offsets at or after the start offset whose delivery is complete; -1 unknown
    delivery_complete_count: int = -1
    # when the state was first written or initialized (ShareSnapshot's CreateTimestamp)
    create_timestamp: int = 0


def completed_count(start_offset: int, batches: tuple[Batch, ...]) -> int:
    """KIP-1226's delivery complete count of a share-partition window: the offsets at or after
    ``start_offset`` whose delivery is complete (Acknowledged, 2, or Archived, 4)."""
    return sum(
        last - max(first, start_offset) + 1
        for first, last, delivery_state, _ in batches
        if delivery_state in (2, 4) and last >= start_offset
    )


def encode_record(
    key: StateKey, state: ShareState | None, snapshot: bool, write_timestamp: int = 0
) -> tuple[bytes, bytes | None]:
    key_version = SNAPSHOT_KEY_VERSION if snapshot else UPDATE_KEY_VERSION
    key_bytes = _VERSION.pack(key_version) + encode_bytes(
        _KEY, key_version, {"group_id": key[0], "topic_id": key[1], "partition": key[2]}
    )
    if state is None:
        return key_bytes, None
    body: dict[str, Any] = {
        "snapshot_epoch": state.snapshot_epoch,
        "create_timestamp": state.create_timestamp,
        "write_timestamp": write_timestamp,
        "state_epoch": state.state_epoch,
        "leader_epoch": state.leader_epoch,
        "start_offset": state.start_offset,
        "delivery_complete_count": state.delivery_complete_count,
        "state_batches": [
            {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
            for f, last, s, c in state.batches
        ],
    }
    spec = _SNAPSHOT_VALUE if snapshot else _UPDATE_VALUE
    return key_bytes, _VERSION.pack(VALUE_VERSION) + encode_bytes(spec, VALUE_VERSION, body)


def _decode(spec: Any, data: bytes, versions: range) -> tuple[int, dict[str, Any]]:
    if len(data) < 2:
        raise ShareRecordError(f"{spec.name}: {len(data)} bytes, no version")
    (version,) = _VERSION.unpack_from(data)
    if version not in versions:
        raise ShareRecordError(f"{spec.name}: unknown version {version}")
    reader = Reader(data, 2)
    try:
        decoded: dict[str, Any] = decode_from(spec, min(version, max(versions)), reader)
    except (ProtocolError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ShareRecordError(f"{spec.name} v{version}: {exc}") from exc
    return version, decoded


def decode_record(
    key: bytes | None, value: bytes | None
) -> tuple[StateKey, bool, dict[str, Any] | None]:
    """``(key, is_snapshot, value fields or None for a tombstone)``."""
    if key is None:
        raise ShareRecordError("record without a key")
    version, k = _decode(_KEY, key, range(2))
    state_key = (k["group_id"], bytes(k["topic_id"]), k["partition"])
    if value is None:
        return state_key, version == SNAPSHOT_KEY_VERSION, None
    spec = _SNAPSHOT_VALUE if version == SNAPSHOT_KEY_VERSION else _UPDATE_VALUE
    _, v = _decode(spec, value, range(1))
    return state_key, version == SNAPSHOT_KEY_VERSION, v


def _no_clock() -> int:
    return 0


@dataclass
class ShareStateStore:
    """Every share-partition state of one ``__share_group_state`` partition."""

    updates_per_snapshot: int = 500
    # milliseconds, for the snapshots' create and write timestamps
    clock: Callable[[], int] = _no_clock
    states: dict[StateKey, ShareState] = field(default_factory=dict)
    updates_since_snapshot: dict[StateKey, int] = field(default_factory=dict)
    # offset of each key's latest snapshot, and the offset after the last record replayed
    snapshot_offsets: dict[StateKey, int] = field(default_factory=dict)
    next_offset: int = 0

    def redundant_before(self) -> int:
        """Every record below this offset is superseded by a later snapshot or tombstone: the
        partition may be pruned up to it (Kafka's share coordinator does the same)."""
        return min(self.snapshot_offsets.values(), default=self.next_offset)

    def replay(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        """Apply one record (at ``offset`` in the partition, -1 when unknown)."""
        if offset >= 0:
            self.next_offset = max(self.next_offset, offset + 1)
        state_key, snapshot, v = decode_record(key, value)
        if v is None:
            self.states.pop(state_key, None)
            self.updates_since_snapshot.pop(state_key, None)
            self.snapshot_offsets.pop(state_key, None)
            return
        if snapshot and offset >= 0:
            self.snapshot_offsets[state_key] = offset
        batches = tuple(
            (b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in v["state_batches"]
        )
        current = self.states.get(state_key)
        if snapshot:
            self.states[state_key] = ShareState(
                v["state_epoch"],
                v["leader_epoch"],
                v["start_offset"],
                batches,
                v["snapshot_epoch"],
                v["delivery_complete_count"],
                v["create_timestamp"],
            )
            self.updates_since_snapshot[state_key] = 0
        elif current is not None:
            self.states[state_key] = replace(
                current,
                leader_epoch=v["leader_epoch"],
                start_offset=v["start_offset"],
                batches=batches,
                delivery_complete_count=v["delivery_complete_count"],
            )
            self.updates_since_snapshot[state_key] = (
                self.updates_since_snapshot.get(state_key, 0) + 1
            )

    def read(
        self, key: StateKey, leader_epoch: int
    ) -> tuple[ErrorCode, ShareState | None, list[tuple[bytes, bytes | None]]]:
        """A new leader's read: its epoch fences older leaders' writes from now on (recorded
        with an update record, returned for the caller to append)."""
        current = self.states.get(key)
        if current is None:
            return ErrorCode.NONE, None, []
        if leader_epoch != -1 and leader_epoch < current.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, None, []
        if leader_epoch > current.leader_epoch:
            updated = replace(current, leader_epoch=leader_epoch)
            return ErrorCode.NONE, current, [self._record(key, updated)]
        return ErrorCode.NONE, current, []

    def write(
        self,
        key: StateKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[Batch, ...],
        delivery_complete_count: int = -1,
    ) -> tuple[ErrorCode, list[tuple[bytes, bytes | None]]]:
        current = self.states.get(key)
        if current is not None:
            if leader_epoch != -1 and leader_epoch < current.leader_epoch:
                return ErrorCode.FENCED_LEADER_EPOCH, []
            if state_epoch < current.state_epoch:
                return ErrorCode.FENCED_STATE_EPOCH, []
        base = current or ShareState(
            state_epoch, leader_epoch, start_offset, create_timestamp=self.clock()
        )
        updated = replace(
            base,
            state_epoch=max(state_epoch, base.state_epoch),
            leader_epoch=max(leader_epoch, base.leader_epoch),
            start_offset=start_offset,
            batches=batches,
            delivery_complete_count=delivery_complete_count,
        )
        if current is not None and state_epoch > current.state_epoch:
            updated = replace(updated, snapshot_epoch=current.snapshot_epoch + 1)
            self.updates_since_snapshot[key] = self.updates_per_snapshot  # forces a snapshot
        return ErrorCode.NONE, [self._record(key, updated)]

    def initialize(
        self, key: StateKey, state_epoch: int, start_offset: int
    ) -> tuple[ErrorCode, list[tuple[bytes, bytes | None]]]:
        current = self.states.get(key)
        if current is not None and state_epoch <= current.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH, []
        leader_epoch = current.leader_epoch if current is not None else -1
        snapshot_epoch = current.snapshot_epoch + 1 if current is not None else 0
        completed = 0 if start_offset >= 0 else -1
        state = ShareState(
            state_epoch, leader_epoch, start_offset, (), snapshot_epoch, completed, self.clock()
        )
        self.updates_since_snapshot[key] = self.updates_per_snapshot
        return ErrorCode.NONE, [self._record(key, state)]

    def delete(self, key: StateKey) -> list[tuple[bytes, bytes | None]]:
        if key not in self.states:
            return []
        return [encode_record(key, None, snapshot=True)]

    def _record(self, key: StateKey, state: ShareState) -> tuple[bytes, bytes | None]:
        """The record that moves ``key`` to ``state``: a snapshot when none was written yet
        or enough updates followed the last one. Applied to the store by the caller's replay
        once appended, so the store never runs ahead of the log."""
        snapshot = (
            key not in self.states
            or self.updates_since_snapshot.get(key, 0) >= self.updates_per_snapshot
        )
        if snapshot and key in self.states:
            state = replace(state, snapshot_epoch=state.snapshot_epoch + 1)
        return encode_record(key, state, snapshot, self.clock() if snapshot else 0)
