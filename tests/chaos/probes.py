"""Read-only questions to the cluster, asked the way an operator's tools ask them.

Contract:

- Every probe opens its own short-lived connection (``sparklog.client.KafkaConnection``, the
  CLI tools' client) with a small timeout and never raises for an unreachable node: a probe of
  a cluster under faults answers what it could learn (``None`` / empty) and the caller decides.
- :func:`partition_states` is Metadata from the first broker that answers: leader, leader
  epoch, replicas and ISR per ``(topic, partition)``.
- :func:`active_controller` is DescribeQuorum's leader id, asked of each controller in turn.
- :func:`watermarks` asks a partition's leader, fenced by the leader epoch it was found with
  (``current_leader_epoch``), for the high watermark (read_uncommitted) and the last stable
  offset (read_committed) with ListOffsets: an answer is therefore known to come from that
  leader epoch.
- :func:`open_transactions` is ListTransactions asked of every broker (each answers for the
  coordinator partitions it leads).
- :func:`segment_batches` reads a replica's raw segment files (closed nodes, or data that no
  longer moves) and returns the bytes of every complete batch below an offset, which is what
  the replica-divergence check compares.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparklog.cli.metadata_quorum_tool import QuorumClient, QuorumCommandError
from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ProtocolError

PROBE_TIMEOUT_S = 3.0
_PROBE_ERRORS = (OSError, ConnectionError, ProtocolError, QuorumCommandError, ValueError)
_BATCH_HEADER = struct.Struct(">qi")  # base offset, batch length (bytes after this field)
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23  # base offset 8, length 4, leader epoch 4, magic 1, crc 4, attrs 2


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


TopicPartition = tuple[str, int]


def _connect(address: str) -> KafkaConnection:
    return KafkaConnection.connect(address, client_id="sparklog-chaos", timeout_s=PROBE_TIMEOUT_S)


def partition_states(
    brokers: Sequence[str], topics: Sequence[str]
) -> dict[TopicPartition, PartitionState]:
    body = {
        "topics": [{"name": t} for t in topics],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    response = _metadata(brokers, body)
    states: dict[TopicPartition, PartitionState] = {}
    if response is not None:
        for topic in response["topics"]:
            if topic["error_code"] != 0:
                continue
            for p in topic["partitions"]:
                states[(topic["name"], int(p["partition_index"]))] = PartitionState(
                    int(p["leader_id"]),
                    int(p.get("leader_epoch", -1)),
                    tuple(int(r) for r in p["replica_nodes"]),
                    tuple(sorted(int(r) for r in p["isr_nodes"])),
                )
    return states


def _metadata(brokers: Sequence[str], body: dict[str, Any]) -> Any:
    """The Metadata answer of the first broker that gives one, else None."""
    for address in brokers:
        try:
            with _connect(address) as conn:
                return conn.request("Metadata", body)
        except _PROBE_ERRORS:
            continue
    return None


def broker_addresses(brokers: Sequence[str]) -> dict[int, str]:
    """node id -> host:port as the brokers' metadata advertises them."""
    body = {"topics": [], "allow_auto_topic_creation": False}
    response = _metadata(brokers, body)
    if response is None:
        return {}
    return {int(b["node_id"]): f"{b['host']}:{b['port']}" for b in response["brokers"]}


def active_controller(controllers: Sequence[str]) -> int | None:
    for address in controllers:
        try:
            partition, _, _ = QuorumClient(address, via_broker=False).describe(attempts=1)
        except _PROBE_ERRORS:
            continue
        leader = int(partition["leader_id"])
        if leader >= 0:
            return leader
    return None


def watermarks(
    address: str, topic: str, partition: int, leader_epoch: int
) -> tuple[int, int] | None:
    """(high watermark, last stable offset) from the leader of ``leader_epoch``, or None."""
    found: list[int] = []
    try:
        with _connect(address) as conn:
            for isolation_level in (0, 1):
                response = conn.request(
                    "ListOffsets",
                    {
                        "replica_id": -1,
                        "isolation_level": isolation_level,
                        "topics": [
                            {
                                "name": topic,
                                "partitions": [
                                    {
                                        "partition_index": partition,
                                        "current_leader_epoch": leader_epoch,
                                        "timestamp": -1,
                                    }
                                ],
                            }
                        ],
                    },
                )
                answer = response["topics"][0]["partitions"][0]
                if answer["error_code"] != 0:
                    return None
                found.append(int(answer["offset"]))
    except _PROBE_ERRORS:
        return None
    except (KeyError, IndexError):
        return None
    return found[0], found[1]


def open_transactions(brokers: Sequence[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Transactions every broker's coordinator lists as Ongoing or Prepare*; unreachable ones."""
    listed: list[dict[str, Any]] = []
    unreachable: list[str] = []
    body = {
        "state_filters": ["Ongoing", "PrepareCommit", "PrepareAbort"],
        "producer_id_filters": [],
    }
    for address in brokers:
        try:
            with _connect(address) as conn:
                response = conn.request("ListTransactions", body)
        except _PROBE_ERRORS:
            unreachable.append(address)
            continue
        if response["error_code"] != 0:
            unreachable.append(f"{address} (error {response['error_code']})")
            continue
        for state in response["transaction_states"]:
            listed.append(
                {
                    "broker": address,
                    "transactional_id": state["transactional_id"],
                    "producer_id": int(state["producer_id"]),
                    "state": state["transaction_state"],
                }
            )
    return listed, unreachable


def _segments(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem))


def segment_batches(partition_dir: Path, below: int) -> tuple[list[bytes], int]:
    """The bytes of each complete batch whose last offset is below ``below``, in log order,
    and the next offset after the last complete batch read (the replica's usable end)."""
    batches: list[bytes] = []
    end = 0
    for segment in _segments(partition_dir):
        data = segment.read_bytes()
        position = 0
        while position + _BATCH_HEADER.size <= len(data):
            base_offset, length = _BATCH_HEADER.unpack_from(data, position)
            size = _BATCH_HEADER.size + length
            if length <= 0 or position + size > len(data) or size < _LAST_OFFSET_DELTA_AT + 4:
                break  # a torn or preallocated tail: the rest of this segment is not log
            (delta,) = _LAST_OFFSET_DELTA.unpack_from(data, position + _LAST_OFFSET_DELTA_AT)
            last_offset = base_offset + delta
            if last_offset < below:
                batches.append(data[position : position + size])
            end = max(end, last_offset + 1)
            position += size
    return batches, end


def partition_dirs(data_dir: Path) -> dict[str, Path]:
    """name (``topic-partition``) -> directory of every partition replica in a data dir."""
    found: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        for child in data_dir.iterdir():
            if child.is_dir() and child.name.rpartition("-")[2].isdigit():
                found[child.name] = child
    return found


def split_partition_dir_name(name: str) -> TopicPartition:
    topic, _, index = name.rpartition("-")
    return topic, int(index)
