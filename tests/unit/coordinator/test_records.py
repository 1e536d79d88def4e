"""__consumer_offsets records round-trip and match Kafka's byte layout."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.coordinator.coordinator import java_string_hash, partition_for
from sparklog.coordinator.records import (
    CoordinatorRecordError,
    GroupMetadataValue,
    GroupRecord,
    MemberRecord,
    OffsetCommitValue,
    OffsetRecord,
    decode_record,
    group_key,
    group_value,
    offset_key,
    offset_value,
)

names = st.text(min_size=0, max_size=20)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


def test_offset_key_layout_is_kafkas() -> None:
    # int16 key version 1, then group, topic (int16-length strings) and int32 partition.
    assert offset_key("g", "t", 3) == bytes.fromhex("000100016700017400000003")


def test_offset_value_layout_is_kafkas_v3() -> None:
    value = offset_value(OffsetCommitValue(5, 1, "m", 100))
    assert value == bytes.fromhex("000300000000000000050000000100016d0000000000000064")


@settings(max_examples=60, deadline=None)
@given(names, names, int32, int64, int32, names, int64)
def test_offset_record_roundtrip(
    group: str, topic: str, partition: int, offset: int, epoch: int, meta: str, ts: int
) -> None:
    value = OffsetCommitValue(offset, epoch, meta, ts)
    decoded = decode_record(offset_key(group, topic, partition), offset_value(value))
    assert decoded == OffsetRecord(group, topic, partition, value)
    tombstone = decode_record(offset_key(group, topic, partition), None)
    assert tombstone == OffsetRecord(group, topic, partition, None)


members = st.builds(
    MemberRecord,
    names,
    st.none() | names,
    names,
    names,
    int32,
    int32,
    st.binary(max_size=20),
    st.binary(max_size=20),
)


@settings(max_examples=60, deadline=None)
@given(
    names, names, int32, st.none() | names, st.none() | names, int64, st.lists(members, max_size=4)
)
def test_group_record_roundtrip(
    group: str,
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    ts: int,
    member_list: list[MemberRecord],
) -> None:
    value = GroupMetadataValue(protocol_type, generation, protocol, leader, ts, tuple(member_list))
    assert decode_record(group_key(group), group_value(value)) == GroupRecord(group, value)
    assert decode_record(group_key(group), None) == GroupRecord(group, None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, None),
        (b"\x00", None),
        (b"\x00\x02\x00", None),  # truncated group key
        (offset_key("g", "t", 0) + b"x", None),  # trailing bytes
        (offset_key("g", "t", 0), b"\x00\x09\x00"),  # unknown value version
        (offset_key("g", "t", 0), b"\x00\x03\x00\x00"),  # truncated value
    ],
)
def test_malformed_records_raise_record_error(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(CoordinatorRecordError):
        decode_record(key, value)


def test_other_record_types_are_ignored() -> None:
    assert decode_record(b"\x00\x03\x00\x01g", b"\x00\x00") is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40), st.none() | st.binary(max_size=40))
def test_fuzzed_records_only_raise_record_error(key: bytes, value: bytes | None) -> None:
    with contextlib.suppress(CoordinatorRecordError):
        decode_record(key, value)


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    # Characters outside the BMP hash as two UTF-16 code units, as in Java.
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_partition_for_uses_kafkas_abs() -> None:
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("my-group", 50) == abs(java_string_hash("my-group")) % 50
