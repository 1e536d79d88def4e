"""The records of ``__transaction_state``: Kafka's ``TransactionLogKey``/``TransactionLogValue``.

The key is an int16 version (0) then the transactional id; the value an int16 version then the
metadata of the transactional id, or null (a tombstone: the id expired). Declarations follow
Apache Kafka's TransactionLogKey/Value JSON files. We write value v1 (flexible, with the
tagged previous/next producer ids and client transaction version, as Kafka 4.x does) and read
v0 and v1, so a log written here reads back in Kafka's tools.

Invariants: ``decode_txn_record(txn_key(i), txn_value(m))`` gives back ``(i, m)``; an unknown
version or a malformed payload raises :class:`TxnRecordError` (the loader skips the record with
a log line; it never takes a node down). An Empty transaction is written with a null partition
list, as Kafka writes it.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any, cast

from sparklog.coordinator.record_types import (
    TransactionLogKey,
    TransactionLogValue,
    TransactionLogValueTransactionPartitions,
)
from sparklog.protocol.codec import decode_from, encode_bytes
from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.schema import MessageSpec, array, field, message
from sparklog.protocol.types import Reader

TXN_KEY_VERSION = 0
TXN_VALUE_VERSION = 1

TRANSACTION_LOG_KEY = message(
    "TransactionLogKey", "0", "none", field("transactional_id", "string", "0")
)

TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue",
    "0-1",
    "1+",
    field("producer_id", "int64"),
    field("previous_producer_id", "int64", "1+", tag=0, default=-1),
    field("next_producer_id", "int64", "1+", tag=1, default=-1),
    field("producer_epoch", "int16"),
    field("transaction_timeout_ms", "int32"),
    field("transaction_status", "int8"),
    array(
        "transaction_partitions",
        field("topic", "string"),
        field("partition_ids", "[]int32"),
        nullable="0+",
    ),
    field("transaction_last_update_timestamp_ms", "int64"),
    field("transaction_start_timestamp_ms", "int64"),
    field("client_transaction_version", "int16", "1+", tag=2, default=0),
)

_VERSION = struct.Struct(">h")


class TxnRecordError(ValueError):
    """A ``__transaction_state`` record we cannot read."""


class TxnState(enum.Enum):
    """Kafka's ``TransactionState``: the value is the id written to the log, the name is what
    DescribeTransactions and ListTransactions show."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_display_name(cls, name: str) -> TxnState | None:
        for state in cls:
            if state.display_name == name:
                return state
        return None


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    """What the log keeps of a transactional id (Kafka's ``TxnTransitMetadata``)."""

    producer_id: int
    previous_producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    last_update_ms: int
    start_ms: int
    next_producer_id: int = -1
    client_transaction_version: int = 0


def txn_key(transactional_id: str) -> bytes:
    body = encode_bytes(
        TRANSACTION_LOG_KEY, TXN_KEY_VERSION, {"transactional_id": transactional_id}
    )
    return _VERSION.pack(TXN_KEY_VERSION) + body


def txn_value(value: TxnLogValue) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(value.partitions):
        by_topic.setdefault(topic, []).append(partition)
    partitions: list[TransactionLogValueTransactionPartitions] | None = (
        None
        if value.state is TxnState.EMPTY
        else [{"topic": t, "partition_ids": ids} for t, ids in by_topic.items()]
    )
    body: TransactionLogValue = {
        "producer_id": value.producer_id,
        "previous_producer_id": value.previous_producer_id,
        "next_producer_id": value.next_producer_id,
        "producer_epoch": value.producer_epoch,
        "transaction_timeout_ms": value.timeout_ms,
        "transaction_status": value.state.value,
        "transaction_partitions": partitions,
        "transaction_last_update_timestamp_ms": value.last_update_ms,
        "transaction_start_timestamp_ms": value.start_ms,
        "client_transaction_version": value.client_transaction_version,
    }
    return _VERSION.pack(TXN_VALUE_VERSION) + encode_bytes(
        TRANSACTION_LOG_VALUE, TXN_VALUE_VERSION, body
    )


def _decode(spec_name: str, data: bytes, spec: MessageSpec, versions: range) -> dict[str, Any]:
    """``data`` (a version prefix, then the body) decoded from ``spec``: the codec's plain dict,
    which the callers narrow to ``spec``'s record type."""
    if len(data) < 2:
        raise TxnRecordError(f"{spec_name}: {len(data)} bytes, no version")
    (version,) = _VERSION.unpack_from(data)
    if version not in versions:
        raise TxnRecordError(f"{spec_name}: unknown version {version}")
    reader = Reader(data, 2)
    try:
        decoded: dict[str, Any] = decode_from(spec, version, reader)
    except (ProtocolError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise TxnRecordError(f"{spec_name} v{version}: {exc}") from exc
    if reader.pos != reader.end:
        raise TxnRecordError(f"{spec_name} v{version}: trailing bytes")
    return decoded


def decode_txn_record(key: bytes | None, value: bytes | None) -> tuple[str, TxnLogValue | None]:
    """The transactional id of a record and its metadata (None for a tombstone)."""
    if key is None:
        raise TxnRecordError("record without a key")
    decoded_key = _decode("TransactionLogKey", key, TRANSACTION_LOG_KEY, range(1))
    transactional_id = cast("TransactionLogKey", decoded_key)["transactional_id"]
    if value is None:
        return transactional_id, None
    v = cast(
        "TransactionLogValue",
        _decode("TransactionLogValue", value, TRANSACTION_LOG_VALUE, range(2)),
    )
    try:
        state = TxnState(v["transaction_status"])
    except ValueError as exc:
        raise TxnRecordError(f"unknown transaction status {v['transaction_status']}") from exc
    partitions = frozenset(
        (p["topic"], index)
        for p in v["transaction_partitions"] or []
        for index in p["partition_ids"]
    )
    return transactional_id, TxnLogValue(
        producer_id=v["producer_id"],
        previous_producer_id=v["previous_producer_id"],
        producer_epoch=v["producer_epoch"],
        timeout_ms=v["transaction_timeout_ms"],
        state=state,
        partitions=frozenset() if state is TxnState.EMPTY else partitions,
        last_update_ms=v["transaction_last_update_timestamp_ms"],
        start_ms=v["transaction_start_timestamp_ms"],
        next_producer_id=v["next_producer_id"],
        client_transaction_version=v["client_transaction_version"],
    )
