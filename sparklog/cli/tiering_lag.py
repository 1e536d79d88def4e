"""The copy lag of tiered partitions, asked of their leaders (``sparklog tiering describe
--bootstrap-server``).

For each partition: Metadata names the leader, then one ListOffsets to it gives the high
watermark (-1), the earliest local offset (-4) and the highest tiered offset (-5, KIP-1005).
The copy lag is the committed offsets above the tier: ``high watermark - (highest tiered + 1)``
(it includes the active segment, which is never copied while it is active; the broker's
``RemoteCopyLagBytes`` / ``RemoteCopyLagSegments`` metrics count closed segments only).

Blocking, one connection per leader, each with the given client security (``--command-config``:
TLS and SASL for a secured cluster); errors are raised as :class:`LagError` naming what failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparklog.client.connection import KafkaConnection
from sparklog.security.client_security import ClientSecurity

LATEST = -1
EARLIEST_LOCAL = -4
LATEST_TIERED = -5


class LagError(Exception):
    """The lag could not be read (unknown topic, no leader, an error from the leader)."""


@dataclass(frozen=True, slots=True)
class PartitionLag:
    partition: int
    leader: int
    high_watermark: int
    earliest_local: int
    highest_tiered: int

    @property
    def lag_offsets(self) -> int:
        return max(self.high_watermark - (self.highest_tiered + 1), 0)


def _leaders(conn: KafkaConnection, topic: str) -> tuple[dict[int, int], dict[int, str]]:
    metadata = conn.request(
        "Metadata",
        {
            "topics": [{"name": topic}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    brokers = {int(b["node_id"]): f"{b['host']}:{b['port']}" for b in metadata["brokers"]}
    leaders: dict[int, int] = {}
    for found in metadata["topics"]:
        if found["error_code"]:
            raise LagError(f"topic {topic}: error {found['error_code']} from Metadata")
        for p in found["partitions"]:
            leaders[int(p["partition_index"])] = int(p["leader_id"])
    return leaders, brokers


def _list_offsets(conn: KafkaConnection, topic: str, partition: int) -> list[int]:
    offsets = []
    for spec in (LATEST, EARLIEST_LOCAL, LATEST_TIERED):
        response: Any = conn.request(
            "ListOffsets",
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": partition,
                                "current_leader_epoch": -1,
                                "timestamp": spec,
                            }
                        ],
                    }
                ],
                "timeout_ms": 30_000,
            },
        )
        answer = response["topics"][0]["partitions"][0]
        if answer["error_code"]:
            raise LagError(f"{topic}-{partition}: error {answer['error_code']} from ListOffsets")
        offsets.append(int(answer["offset"]))
    return offsets


def copy_lag(
    bootstrap: str, topic: str, partitions: list[int], security: ClientSecurity | None = None
) -> list[PartitionLag]:
    """The copy lag of ``topic``'s ``partitions``, each from its leader."""
    with KafkaConnection.connect(bootstrap, security=security) as conn:
        leaders, brokers = _leaders(conn, topic)
    lags = []
    for partition in partitions:
        leader = leaders.get(partition, -1)
        if leader < 0 or leader not in brokers:
            raise LagError(f"{topic}-{partition} has no leader")
        with KafkaConnection.connect(brokers[leader], security=security) as conn:
            hw, local, tiered = _list_offsets(conn, topic, partition)
        lags.append(PartitionLag(partition, leader, hw, local, tiered))
    return lags
