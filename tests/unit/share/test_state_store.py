"""The share coordinator's state store: records round-trip, a replay of the appended records
gives back the written state (snapshots every N updates), and leader epochs fence old leaders."""

from __future__ import annotations

import struct
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.protocol.codec import decode_from, encode_bytes
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.messages.read_share_group_state_summary import RESPONSE
from sparklog.protocol.types import Reader
from sparklog.share.state_store import (
    ShareState,
    ShareStateStore,
    completed_count,
    decode_record,
    encode_record,
)

KEY = ("g", b"\x01" * 16, 3)


def apply(store: ShareStateStore, records: list[tuple[bytes, bytes | None]]) -> None:
    for key, value in records:
        store.replay(key, value)


def test_records_round_trip() -> None:
    state = ShareState(2, 5, 100, ((100, 104, 0, 1), (105, 105, 2, 3)), 7, 1, 1234)
    key, value = encode_record(KEY, state, snapshot=True, write_timestamp=5678)
    assert decode_record(key, value) == (
        KEY,
        True,
        {
            "snapshot_epoch": 7,
            "state_epoch": 2,
            "leader_epoch": 5,
            "start_offset": 100,
            "delivery_complete_count": 1,
            "create_timestamp": 1234,
            "write_timestamp": 5678,
            "state_batches": [
                {"first_offset": 100, "last_offset": 104, "delivery_state": 0, "delivery_count": 1},
                {"first_offset": 105, "last_offset": 105, "delivery_state": 2, "delivery_count": 3},
            ],
        },
    )
    tombstone = encode_record(KEY, None, snapshot=True)
    assert decode_record(*tombstone) == (KEY, True, None)


def test_value_layouts_are_kafka_42s() -> None:
    """ShareSnapshotValue v0: int32 SnapshotEpoch, StateEpoch, LeaderEpoch, int64 StartOffset,
    CreateTimestamp, WriteTimestamp, StateBatches, then the tagged DeliveryCompleteCount (tag 0);
    ShareUpdateValue v0: int32 SnapshotEpoch, LeaderEpoch, int64 StartOffset, StateBatches."""
    batch = struct.pack(">qqbh", 100, 104, 2, 1) + b"\x00"  # no tagged fields
    state = ShareState(2, 5, 100, ((100, 104, 2, 1),), 7, 5, 1234)
    _, snapshot = encode_record(KEY, state, snapshot=True, write_timestamp=5678)
    tagged = b"\x01" + b"\x00\x04" + struct.pack(">i", 5)  # one field: tag 0, 4 bytes
    assert snapshot == (
        struct.pack(">hiiiqqq", 0, 7, 2, 5, 100, 1234, 5678) + b"\x02" + batch + tagged
    )
    _, update = encode_record(KEY, replace(state, delivery_complete_count=-1), snapshot=False)
    assert update == struct.pack(">hiiq", 0, 7, 5, 100) + b"\x02" + batch + b"\x00"


@settings(max_examples=60)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 1000), st.integers(0, 3), st.integers(1, 5)),
        min_size=1,
        max_size=30,
    ),
    per_snapshot=st.integers(0, 4),
)
def test_replaying_the_log_gives_the_written_state(
    writes: list[tuple[int, int, int]], per_snapshot: int
) -> None:
    store = ShareStateStore(per_snapshot)
    log: list[tuple[bytes, bytes | None]] = []
    snapshots = 0
    for start, state, count in writes:
        batches = ((start, start + 2, state, count),)
        code, records = store.write(KEY, 0, 1, start, batches)
        assert code == ErrorCode.NONE and len(records) == 1
        snapshots += decode_record(*records[0])[1]
        apply(store, records)
        log += records
    replayed = ShareStateStore(per_snapshot)
    apply(replayed, log)
    assert replayed.states == store.states
    last_start, last_state, last_count = writes[-1]
    assert store.states[KEY].start_offset == last_start
    assert store.states[KEY].batches == ((last_start, last_start + 2, last_state, last_count),)
    assert snapshots >= 1 + (len(writes) - 1) // (per_snapshot + 1)


def test_leader_epochs_fence_older_leaders() -> None:
    store = ShareStateStore(500)
    code, records = store.write(KEY, 0, 3, 0, ())
    apply(store, records)
    code, state, records = store.read(KEY, leader_epoch=4)
    assert code == ErrorCode.NONE and state is not None
    apply(store, records)
    assert store.write(KEY, 0, 3, 10, ())[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert store.read(KEY, leader_epoch=3)[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert store.write(KEY, 0, 4, 10, ())[0] == ErrorCode.NONE


def test_delete_writes_a_tombstone() -> None:
    store = ShareStateStore(500)
    apply(store, store.write(KEY, 0, 1, 5, ())[1])
    apply(store, store.delete(KEY))
    assert KEY not in store.states
    assert store.read(KEY, 1) == (ErrorCode.NONE, None, [])


@settings(max_examples=60)
@given(
    ops=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 1000), st.booleans()), min_size=1, max_size=40
    ),
    per_snapshot=st.integers(0, 3),
)
def test_pruning_below_redundant_before_keeps_the_state(
    ops: list[tuple[int, int, bool]], per_snapshot: int
) -> None:
    store = ShareStateStore(per_snapshot)
    log: list[tuple[bytes, bytes | None]] = []
    for which, start, delete in ops:
        key = ("g", b"\x01" * 16, which)
        records = store.delete(key) if delete else store.write(key, 0, 1, start, ())[1]
        for k, v in records:
            store.replay(k, v, len(log))
            log.append((k, v))
    prune = store.redundant_before()
    assert 0 <= prune <= len(log)
    pruned = ShareStateStore(per_snapshot)
    for offset in range(prune, len(log)):
        pruned.replay(*log[offset], offset)
    assert pruned.states == store.states


def test_delivery_complete_count_counts_acked_and_archived_from_the_start_offset() -> None:
    # (first, last, state, count): 2 Acknowledged, 4 Archived, 0 Available
    batches = ((5, 9, 2, 1), (10, 11, 0, 1), (12, 14, 4, 5), (15, 15, 2, 1))
    assert completed_count(5, batches) == 5 + 3 + 1
    # a batch that starts before the start offset counts from the start offset only
    assert completed_count(8, batches) == 2 + 3 + 1
    assert completed_count(16, batches) == 0


def test_the_written_delivery_complete_count_is_stored_and_replayed() -> None:
    """The coordinator keeps what the leader wrote (tagged field 0 of both record values), not
    a count of its own; a v0 write (-1) leaves it unknown, an initialized start offset is 0."""
    store = ShareStateStore(updates_per_snapshot=2)
    batches = ((0, 3, 2, 1), (4, 9, 0, 1))
    written: list[tuple[bytes, bytes | None]] = []
    for count in (4, 7, -1, 5):  # snapshot, update, update, snapshot again
        code, records = store.write(KEY, 1, 0, 0, batches, count)
        assert code == ErrorCode.NONE
        apply(store, records)
        written += records
        assert store.states[KEY].delivery_complete_count == count
    replayed = ShareStateStore()
    apply(replayed, written)
    assert replayed.states[KEY].delivery_complete_count == 5
    _, snapshot, value = decode_record(*written[0])
    assert snapshot and value is not None and value["delivery_complete_count"] == 4
    # -1 is the field's default: not written, so a v0 coordinator's record is the same bytes
    _, minus_one = encode_record(KEY, ShareState(1, 0, 0, batches), snapshot=False)
    _, four = encode_record(KEY, ShareState(1, 0, 0, batches, 0, 4), snapshot=False)
    assert minus_one is not None and four is not None and len(four) == len(minus_one) + 6
    code, records = store.initialize(KEY, 2, 10)
    apply(store, records)
    assert store.states[KEY].delivery_complete_count == 0


def test_summary_v1_carries_the_delivery_complete_count() -> None:
    part = {"partition": 0, "error_code": 0, "error_message": None, "state_epoch": 1,
            "leader_epoch": 3, "start_offset": 5, "delivery_complete_count": 9}  # fmt: skip
    body = {"results": [{"topic_id": b"\x01" * 16, "partitions": [part]}]}
    v1 = decode_from(RESPONSE, 1, Reader(encode_bytes(RESPONSE, 1, body), 0))
    assert v1["results"][0]["partitions"][0]["delivery_complete_count"] == 9
    v0_bytes = encode_bytes(RESPONSE, 0, body)
    assert len(v0_bytes) == len(encode_bytes(RESPONSE, 1, body)) - 4
    v0 = decode_from(RESPONSE, 0, Reader(v0_bytes, 0))
    assert v0["results"][0]["partitions"][0]["leader_epoch"] == 3


def test_snapshots_keep_the_create_time_and_stamp_the_write_time() -> None:
    now = [1000]
    store = ShareStateStore(updates_per_snapshot=1, clock=lambda: now[0])
    code, records = store.write(KEY, 1, 0, 0, ((0, 0, 2, 1),), 1)
    assert code == ErrorCode.NONE
    apply(store, records)
    now[0] = 2000
    _, records = store.write(KEY, 1, 0, 1, (), 0)  # an update (1 per snapshot)
    apply(store, records)
    _, records = store.write(KEY, 1, 0, 1, (), 0)  # then a snapshot
    _, snapshot, value = decode_record(*records[0])
    assert snapshot and value is not None
    assert (value["create_timestamp"], value["write_timestamp"]) == (1000, 2000)
    code, records = store.initialize(KEY, 2, 5)
    assert code == ErrorCode.NONE
    _, _, value = decode_record(*records[0])
    assert value is not None and value["create_timestamp"] == 2000
