"""A small blocking Kafka producer over :class:`~sparklog.client.connection.KafkaConnection`.

Used by the connector's sink on executors and by tools. ``send()`` buffers a record in its
partition's batch; a batch is produced when it reaches ``batch_size`` bytes, and ``flush()``
produces every buffered batch and returns when all are acknowledged (or raises).

Contract and invariants:
- Partitioning is Kafka's default: an explicit partition wins; a keyed record goes to
  ``murmur2(key) & 0x7fffffff % partitions`` (the Java client's and librdkafka's
  ``murmur2_random``); a record without key sticks to one partition per topic, which moves on
  (round-robin) each time that partition's batch is sent.
- Batches are record batch v2 built by :mod:`sparklog.protocol.record_codec`, compressed with
  ``compression`` (none, gzip, snappy, lz4, zstd), produced with ``acks`` (default -1 = all).
- Retriable errors (Kafka's ``RetriableException`` codes, a lost connection) refresh metadata
  and resend after ``retry_backoff_ms``, at most ``retries`` times; anything else, or running out
  of retries, raises :class:`ProduceError` naming the topic, partition and Kafka error. There is
  no idempotence: a retry after a lost acknowledgement may write a batch twice (at-least-once,
  as Spark's Kafka sink).
- Records of one partition are acknowledged in ``send()`` order: one batch per partition is in
  flight at a time, and batches are sent in the order they were filled.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from sparklog.protocol import compression as codecs
from sparklog.protocol.errors import ErrorCode, retriable
from sparklog.protocol.message_types import (
    ProduceResponse,
    ProduceResponseResponsesPartitionResponses,
)
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.security.client_security import ClientSecurity

from .connection import KafkaConnection

__all__ = [
    "ProduceError",
    "Producer",
    "ProducerConfig",
    "RecordMetadata",
    "default_partition",
    "murmur2",
]

_MURMUR_SEED: Final = 0x9747B28C
_MURMUR_M: Final = 0x5BD1E995
_MASK32: Final = 0xFFFFFFFF
COMPRESSION_CODECS: Final = {name: codec for codec, name in codecs.CODEC_NAMES.items()}
# Bytes a record adds to a batch besides key, value and headers (varints, attributes).
_RECORD_OVERHEAD: Final = 21


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 of ``data`` (``Utils.murmur2``), as a signed int."""
    length = len(data)
    h = (_MURMUR_SEED ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _MURMUR_M) & _MASK32
        k ^= k >> 24
        k = (k * _MURMUR_M) & _MASK32
        h = ((h * _MURMUR_M) & _MASK32) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 13
    h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null ``key``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class ProduceError(RuntimeError):
    """A produce failed for good: a non-retriable error, or retries exhausted."""

    def __init__(self, topic: str, partition: int | None, error_code: int, detail: str) -> None:
        known = error_code in ErrorCode._value2member_map_
        name = ErrorCode(error_code).name if known else str(error_code)
        where = topic if partition is None else f"{topic}-{partition}"
        super().__init__(f"producing to {where} failed: {name} ({error_code}): {detail}")
        self.topic = topic
        self.partition = partition
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    acks: int = -1
    compression: str = "none"
    batch_size: int = 1 << 20
    retries: int = 10
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30_000
    client_id: str = "sparklog-producer"
    # TLS/SASL for secured listeners (None: PLAINTEXT).
    security: ClientSecurity | None = None

    def __post_init__(self) -> None:
        # acks=0 has no response, which KafkaConnection's request/response model cannot express.
        if self.acks not in (-1, 1):
            raise ValueError(f"acks must be -1 (all) or 1, got {self.acks}")
        if self.compression not in COMPRESSION_CODECS:
            raise ValueError(
                f"compression.type must be one of {', '.join(COMPRESSION_CODECS)},"
                f" got {self.compression!r}"
            )
        if self.batch_size <= 0 or self.retries < 0 or self.retry_backoff_ms < 0:
            raise ValueError("batch.size must be positive; retries and retry.backoff.ms >= 0")


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where an acknowledged batch landed: its first offset and record count."""

    topic: str
    partition: int
    base_offset: int
    record_count: int


@dataclass(frozen=True, slots=True)
class _PartitionInfo:
    leader: int


@dataclass(frozen=True, slots=True)
class _TopicInfo:
    topic_id: bytes
    partitions: tuple[_PartitionInfo, ...]


@dataclass
class _Batch:
    topic: str
    partition: int
    records: list[RecordInput] = field(default_factory=list)
    size_bytes: int = 0


class Producer:
    def __init__(self, bootstrap_servers: str, config: ProducerConfig | None = None) -> None:
        self.config = config or ProducerConfig()
        self._bootstrap = [s.strip() for s in bootstrap_servers.split(",") if s.strip()]
        if not self._bootstrap:
            raise ValueError("bootstrap servers must name at least one host:port")
        self._codec = COMPRESSION_CODECS[self.config.compression]
        self._timeout_s = self.config.request_timeout_ms / 1000
        self._brokers: dict[int, str] = {}
        self._topics: dict[str, _TopicInfo] = {}
        self._connections: dict[str, KafkaConnection] = {}
        self._pending: dict[tuple[str, int], _Batch] = {}
        self._sticky: dict[str, int] = {}
        self._round_robin = itertools.count(random.randrange(1 << 16))
        self.acknowledged: list[RecordMetadata] = []

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._connections.values():
            with contextlib.suppress(OSError):
                conn.close()
        self._connections.clear()

    def partitions_for(self, topic: str) -> int:
        return len(self._topic(topic).partitions)

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        count = self.partitions_for(topic)
        if partition is None:
            partition = (
                default_partition(key, count) if key is not None else self._sticky_for(topic, count)
            )
        elif not 0 <= partition < count:
            raise ValueError(
                f"Invalid partition given with record: {partition} is not in the range"
                f" [0...{count}) of topic {topic}"
            )
        batch = self._pending.setdefault((topic, partition), _Batch(topic, partition))
        record = RecordInput(
            key,
            value,
            tuple(headers),
            int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
            len(batch.records),
        )
        batch.records.append(record)
        batch.size_bytes += (
            _RECORD_OVERHEAD
            + len(key or b"")
            + len(value or b"")
            + sum(len(k) + len(v or b"") + 2 for k, v in record.headers)
        )
        if batch.size_bytes >= self.config.batch_size:
            self._send_batches([self._pending.pop((topic, partition))])

    def flush(self) -> None:
        """Produce every buffered record; returns when all are acknowledged."""
        batches = list(self._pending.values())
        self._pending.clear()
        if batches:
            self._send_batches(batches)

    def _sticky_for(self, topic: str, count: int) -> int:
        current = self._sticky.get(topic)
        if current is None or current >= count:
            current = next(self._round_robin) % count
            self._sticky[topic] = current
        return current

    # -- metadata and connections

    def _connection(self, address: str) -> KafkaConnection:
        conn = self._connections.get(address)
        if conn is None:
            conn = KafkaConnection.connect(
                address,
                client_id=self.config.client_id,
                timeout_s=self._timeout_s,
                security=self.config.security,
            )
            self._connections[address] = conn
        return conn

    def _drop(self, address: str) -> None:
        conn = self._connections.pop(address, None)
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    def _any_connection(self) -> tuple[str, KafkaConnection]:
        last: Exception | None = None
        for address in [*self._brokers.values(), *self._bootstrap]:
            try:
                return address, self._connection(address)
            except OSError as exc:
                last = exc
        raise ConnectionError(f"no broker reachable (bootstrap {self._bootstrap}): {last}")

    def _refresh(self, topics: Sequence[str]) -> dict[str, int]:
        """Fetch metadata for ``topics``; returns the error code of each topic that failed."""
        address, conn = self._any_connection()
        try:
            response = conn.request(
                "Metadata",
                {
                    "topics": [{"name": t} for t in topics],
                    "allow_auto_topic_creation": True,
                    "include_topic_authorized_operations": False,
                },
            )
        except (OSError, ConnectionError):
            self._drop(address)
            raise
        self._brokers = {b["node_id"]: f"{b['host']}:{b['port']}" for b in response["brokers"]}
        failed = {}
        for topic in response["topics"]:
            if topic["error_code"] != 0 or not topic["partitions"]:
                failed[topic["name"]] = int(topic["error_code"]) or int(
                    ErrorCode.LEADER_NOT_AVAILABLE
                )
                continue
            ordered = sorted(topic["partitions"], key=lambda p: p["partition_index"])
            self._topics[topic["name"]] = _TopicInfo(
                bytes(topic.get("topic_id") or b"\x00" * 16),
                tuple(_PartitionInfo(int(p["leader_id"])) for p in ordered),
            )
        return failed

    def _topic(self, topic: str) -> _TopicInfo:
        info = self._topics.get(topic)
        if info is not None:
            return info
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                failed = self._refresh([topic])
            except (OSError, ConnectionError) as exc:
                failed = {topic: int(ErrorCode.NETWORK_EXCEPTION)}
                detail = str(exc)
            else:
                detail = "no metadata"
            info = self._topics.get(topic)
            if info is not None:
                return info
            code = failed.get(topic, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            if not retriable(code) or time.monotonic() > deadline:
                raise ProduceError(
                    topic,
                    None,
                    code,
                    f"topic not present in metadata after {self.config.request_timeout_ms} ms"
                    f" ({detail})",
                )
            time.sleep(self.config.retry_backoff_ms / 1000)

    # -- producing

    def _send_batches(self, batches: list[_Batch]) -> None:
        attempt = 0
        while batches:
            failures: list[tuple[_Batch, int, str]] = []
            by_leader: dict[str, list[_Batch]] = {}
            for batch in batches:
                leader = self._topic(batch.topic).partitions[batch.partition].leader
                address = self._brokers.get(leader)
                if address is None:
                    failures.append((batch, int(ErrorCode.LEADER_NOT_AVAILABLE), "no leader"))
                else:
                    by_leader.setdefault(address, []).append(batch)
            for address, group in by_leader.items():
                failures.extend(self._produce(address, group))
            if not failures:
                return
            attempt += 1
            for batch, code, detail in failures:
                if not retriable(code) or attempt > self.config.retries:
                    if retriable(code):
                        detail = f"{detail}; gave up after {self.config.retries} retries"
                    raise ProduceError(batch.topic, batch.partition, code, detail)
            time.sleep(self.config.retry_backoff_ms / 1000)
            for topic in {b.topic for b, _, _ in failures}:
                self._topics.pop(topic, None)
            batches = [b for b, _, _ in failures]

    def _produce(self, address: str, group: list[_Batch]) -> list[tuple[_Batch, int, str]]:
        """One Produce request to ``address``; returns the batches that failed, with why."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for batch in group:
            records = build_batch(batch.records, compression=self._codec)
            topics.setdefault(batch.topic, []).append(
                {"index": batch.partition, "records": records}
            )
        body = {
            "transactional_id": None,
            "acks": self.config.acks,
            "timeout_ms": self.config.request_timeout_ms,
            "topic_data": [
                {"name": t, "topic_id": self._topic(t).topic_id, "partition_data": parts}
                for t, parts in topics.items()
            ],
        }
        try:
            conn = self._connection(address)
            response = cast("ProduceResponse", conn.request("Produce", body))
        except (OSError, ConnectionError) as exc:
            self._drop(address)
            return [(b, int(ErrorCode.NETWORK_EXCEPTION), f"{address}: {exc}") for b in group]
        results: dict[tuple[str, int], ProduceResponseResponsesPartitionResponses] = {}
        id_to_name = {self._topics[t].topic_id: t for t in topics if t in self._topics}
        for topic in response["responses"]:
            name = topic.get("name") or id_to_name.get(bytes(topic.get("topic_id") or b""), "")
            for p in topic["partition_responses"]:
                results[(name, int(p["index"]))] = p
        failed: list[tuple[_Batch, int, str]] = []
        for batch in group:
            answer = results.get((batch.topic, batch.partition))
            if answer is None:
                failed.append(
                    (batch, int(ErrorCode.UNKNOWN_SERVER_ERROR), "no answer for the partition")
                )
            elif answer["error_code"] != 0:
                detail = answer.get("error_message") or "the broker refused the batch"
                failed.append((batch, int(answer["error_code"]), str(detail)))
            else:
                self.acknowledged.append(
                    RecordMetadata(
                        batch.topic,
                        batch.partition,
                        int(answer["base_offset"]),
                        len(batch.records),
                    )
                )
                if self._sticky.get(batch.topic) == batch.partition:
                    del self._sticky[batch.topic]
        return failed
