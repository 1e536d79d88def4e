"""A small blocking partition reader (an "assign" consumer) over
:class:`~sparklog.client.connection.KafkaConnection`, for the console consumer and perf tools.

Contract and invariants:
- ``PartitionReader(bootstrap)`` reads the partitions given to :meth:`assign`, each from its
  start offset, by Fetch (v12) at the partition's leader (found with Metadata, refreshed when a
  fetch answers NOT_LEADER_OR_FOLLOWER and similar retriable errors).
- :meth:`poll` returns the next records in offset order per partition (control records are
  never returned); with ``isolation_level=1`` (read_committed) it reads up to the last stable
  offset and drops the records of aborted transactions, using the response's
  ``aborted_transactions`` as Kafka's fetcher does.
- :meth:`end_offsets` is ListOffsets(latest) for the assigned partitions; :meth:`position`
  the next offset to read. There is no group membership: committing is the caller's job.
- A partition that fails with a non-retriable error raises :class:`FetchError` naming it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from sparklog.protocol.errors import error_name, retriable
from sparklog.protocol.kafka_uuid import ZERO_UUID
from sparklog.protocol.message_types import (
    FetchRequest,
    FetchResponse,
    FetchResponseResponsesPartitions,
)
from sparklog.protocol.record_codec import decode_batch
from sparklog.protocol.records import iter_batches
from sparklog.security.client_security import ClientSecurity

from .connection import KafkaConnection
from .pool import ConnectionPool

TopicPartition = tuple[str, int]
_FETCH_VERSION = 12
_UNKNOWN_HIGH_WATERMARK = (1 << 63) - 1  # v18's declared default, not sent at v12
_OFFSET_OUT_OF_RANGE = 1


class FetchError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


class PartitionReader:
    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str = "sparklog-consumer",
        isolation_level: int = 0,
        max_wait_ms: int = 500,
        partition_max_bytes: int = 1 << 20,
        timeout_s: float = 30.0,
        security: ClientSecurity | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        self.isolation_level = isolation_level
        self.max_wait_ms = max_wait_ms
        self.partition_max_bytes = partition_max_bytes
        self._pool = ConnectionPool(client_id, timeout_s, security)
        self._bootstrap = [a.strip() for a in bootstrap.split(",") if a.strip()]
        self._positions: dict[TopicPartition, int] = {}
        self._leaders: dict[TopicPartition, str] = {}

    def __enter__(self) -> PartitionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    def _any(self) -> KafkaConnection:
        return self._pool.first(self._bootstrap)[1]

    def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (empty when it does not exist)."""
        self._refresh([topic])
        return sorted(p for t, p in self._leaders if t == topic)

    def _refresh(self, topics: Iterable[str]) -> None:
        response = self._any().request(
            "Metadata",
            {
                "topics": [{"name": t} for t in sorted(set(topics))],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        brokers = {b["node_id"]: f"{b['host']}:{b['port']}" for b in response["brokers"]}
        for topic in response["topics"]:
            for p in topic["partitions"]:
                address = brokers.get(p["leader_id"])
                if address is not None:
                    self._leaders[(topic["name"], p["partition_index"])] = address

    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        self._positions = dict(positions)
        self._refresh({t for t, _ in positions})

    def position(self, tp: TopicPartition) -> int:
        return self._positions[tp]

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read ``tp`` from ``offset`` on (also: where a reader that stopped mid-batch is)."""
        self._positions[tp] = offset

    def list_offsets(
        self, tps: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        wanted = list(tps)
        self._refresh({t for t, _ in wanted})
        for tp in wanted:
            address = self._leaders.get(tp)
            if address is None:
                raise FetchError(f"{tp[0]}-{tp[1]} has no leader (does the topic exist?)")
            response = self._pool.get(address).request(
                "ListOffsets",
                {
                    "replica_id": -1,
                    "isolation_level": self.isolation_level,
                    "topics": [
                        {
                            "name": tp[0],
                            "partitions": [
                                {
                                    "partition_index": tp[1],
                                    "current_leader_epoch": -1,
                                    "timestamp": timestamp,
                                }
                            ],
                        }
                    ],
                    "timeout_ms": int(self._timeout_s * 1000),
                },
            )
            entry = response["topics"][0]["partitions"][0]
            if entry["error_code"]:
                raise FetchError(f"{tp[0]}-{tp[1]}: {error_name(entry['error_code'])}")
            out[tp] = entry["offset"]
        return out

    def end_offsets(self) -> dict[TopicPartition, int]:
        return self.list_offsets(self._positions, -1)

    def poll(self) -> list[ConsumedRecord]:
        """One Fetch round to every leader; the records it returned, in offset order."""
        by_leader: dict[str, list[TopicPartition]] = {}
        for tp in sorted(self._positions):
            address = self._leaders.get(tp)
            if address is None:
                self._refresh([tp[0]])
                address = self._leaders.get(tp)
            if address is not None:
                by_leader.setdefault(address, []).append(tp)
        out: list[ConsumedRecord] = []
        for address, tps in by_leader.items():
            try:
                answer = self._pool.get(address).request(
                    "Fetch", self._fetch_body(tps), _FETCH_VERSION
                )
                response = cast("FetchResponse", answer)
            except (OSError, ConnectionError):
                self._pool.drop(address)
                self._leaders = {k: v for k, v in self._leaders.items() if v != address}
                time.sleep(0.2)
                continue
            for topic in response["responses"]:
                for p in topic["partitions"]:
                    out += self._take((topic["topic"], p["partition_index"]), p)
        return out

    def _fetch_body(self, tps: list[TopicPartition]) -> FetchRequest:
        by_topic: dict[str, list[int]] = {}
        for topic, index in tps:
            by_topic.setdefault(topic, []).append(index)
        # v12: the later versions' fields at their declared defaults, not sent
        return {
            "cluster_id": None,
            "replica_id": -1,
            "replica_state": None,
            "max_wait_ms": self.max_wait_ms,
            "min_bytes": 1,
            "max_bytes": 50 << 20,
            "isolation_level": self.isolation_level,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "topic_id": ZERO_UUID,
                    "partitions": [
                        {
                            "partition": index,
                            "current_leader_epoch": -1,
                            "fetch_offset": self._positions[(topic, index)],
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": self.partition_max_bytes,
                            "replica_directory_id": ZERO_UUID,
                            "high_watermark": _UNKNOWN_HIGH_WATERMARK,
                        }
                        for index in indexes
                    ],
                }
                for topic, indexes in by_topic.items()
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    def _take(
        self, tp: TopicPartition, p: FetchResponseResponsesPartitions
    ) -> list[ConsumedRecord]:
        code = p["error_code"]
        if code == _OFFSET_OUT_OF_RANGE:
            raise FetchError(
                f"offset {self._positions[tp]} is out of range for {tp[0]}-{tp[1]} "
                f"(log start {p.get('log_start_offset', -1)}, end {p['high_watermark']})"
            )
        if code:
            if retriable(code):
                self._leaders.pop(tp, None)
                return []
            raise FetchError(f"fetching {tp[0]}-{tp[1]}: {error_name(code)}")
        data = bytes(cast("memoryview | None", p.get("records")) or b"")  # decoded: a view
        aborted = sorted(
            (a["first_offset"], a["producer_id"]) for a in p.get("aborted_transactions") or []
        )
        aborting: set[int] = set()
        out: list[ConsumedRecord] = []
        position = self._positions[tp]
        for pos, header in iter_batches(data):
            while aborted and aborted[0][0] <= header.last_offset:
                aborting.add(aborted.pop(0)[1])
            if header.next_offset <= position:
                continue
            if header.is_control:
                aborting.discard(header.producer_id)
                position = header.next_offset
                continue
            if (
                self.isolation_level == 1
                and header.is_transactional
                and header.producer_id in aborting
            ):
                position = header.next_offset
                continue
            _, records = decode_batch(data, pos)
            for r in records:
                if r.offset >= position:
                    out.append(
                        ConsumedRecord(
                            tp[0],
                            tp[1],
                            r.offset,
                            r.timestamp,
                            header.timestamp_type,
                            r.key,
                            r.value,
                            r.headers,
                        )
                    )
            position = header.next_offset
        self._positions[tp] = position
        return out
