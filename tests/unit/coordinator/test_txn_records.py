"""``__transaction_state`` records: round trips, Kafka's byte layout, and malformed input."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.coordinator.txn_records import (
    TxnLogValue,
    TxnRecordError,
    TxnState,
    decode_txn_record,
    txn_key,
    txn_value,
)

_names = st.text(st.characters(codec="utf-8"), max_size=20)
_partitions = st.frozensets(st.tuples(_names, st.integers(0, 2**31 - 1)), max_size=8)


@st.composite
def values(draw: st.DrawFn) -> TxnLogValue:
    state = draw(st.sampled_from(list(TxnState)))
    partitions = frozenset() if state is TxnState.EMPTY else draw(_partitions)
    return TxnLogValue(
        producer_id=draw(st.integers(0, 2**63 - 1)),
        previous_producer_id=draw(st.integers(-1, 2**63 - 1)),
        producer_epoch=draw(st.integers(-1, 32767)),
        timeout_ms=draw(st.integers(1, 2**31 - 1)),
        state=state,
        partitions=partitions,
        last_update_ms=draw(st.integers(-1, 2**62)),
        start_ms=draw(st.integers(-1, 2**62)),
        next_producer_id=draw(st.integers(-1, 2**63 - 1)),
        client_transaction_version=draw(st.integers(0, 2)),
    )


@settings(max_examples=200)
@given(_names, values())
def test_round_trip(transactional_id: str, value: TxnLogValue) -> None:
    assert decode_txn_record(txn_key(transactional_id), txn_value(value)) == (
        transactional_id,
        value,
    )


def test_tombstone() -> None:
    assert decode_txn_record(txn_key("t"), None) == ("t", None)


def test_layout_matches_kafka_value_v1() -> None:
    value = TxnLogValue(5, -1, 3, 60000, TxnState.ONGOING, frozenset({("a", 1)}), 10, 9)
    # version 1 | producer id | epoch | timeout | status | compact array [a:[1]] | update | start |
    # no tagged fields (all at their defaults)
    expected = bytes.fromhex(
        "0001000000000000000500030000ea6001020261020000000100000000000000000a000000000000000900"
    )
    assert txn_value(value) == expected
    assert txn_key("tx") == bytes.fromhex("000000027478")


def test_empty_state_writes_null_partitions() -> None:
    value = TxnLogValue(5, -1, 0, 60000, TxnState.EMPTY, frozenset(), 10, -1)
    encoded = txn_value(value)
    # the compact array length right after status is 0: null
    assert encoded[2 + 8 + 2 + 4 + 1] == 0
    assert decode_txn_record(txn_key("x"), encoded)[1] == value


def test_reads_value_v0() -> None:
    v0 = bytes.fromhex(
        "0000"
        "0000000000000007"
        "0001"
        "00001388"
        "04"
        "00000001"
        "0001"
        "62"
        "00000002"
        "00000000"
        "00000003"
        "0000000000000064"
        "0000000000000032"
    )
    _, value = decode_txn_record(txn_key("x"), v0)
    assert value == TxnLogValue(
        7, -1, 1, 5000, TxnState.COMPLETE_COMMIT, frozenset({("b", 0), ("b", 3)}), 100, 50
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, None),
        (b"\x00", None),
        (b"\x00\x05\x00\x01x", None),  # unknown key version
        (txn_key("x"), b"\x00\x09"),  # unknown value version
        (txn_key("x"), txn_value(TxnLogValue(1, -1, 0, 1, TxnState.EMPTY, frozenset(), 0, 0))[:-3]),
        (txn_key("x") + b"\x00", None),  # trailing bytes
    ],
)
def test_malformed_records_raise_txn_record_error(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(TxnRecordError):
        decode_txn_record(key, value)


def test_unknown_status_is_an_error() -> None:
    encoded = bytearray(txn_value(TxnLogValue(1, -1, 0, 1, TxnState.ONGOING, frozenset(), 0, 0)))
    encoded[2 + 8 + 2 + 4] = 42
    with pytest.raises(TxnRecordError):
        decode_txn_record(txn_key("x"), bytes(encoded))


@settings(max_examples=300)
@given(st.binary(max_size=64), st.one_of(st.none(), st.binary(max_size=96)))
def test_arbitrary_bytes_never_escape_as_other_errors(key: bytes, value: bytes | None) -> None:
    with contextlib.suppress(TxnRecordError):
        decode_txn_record(key, value)


def test_state_display_names_are_kafkas() -> None:
    assert [s.display_name for s in TxnState] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]
    assert TxnState.from_display_name("PrepareAbort") is TxnState.PREPARE_ABORT
    assert TxnState.from_display_name("bogus") is None
