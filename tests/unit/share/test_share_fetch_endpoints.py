"""ShareFetch/ShareAcknowledge name the current leader's endpoint (on the request's listener)
for each partition they answer NOT_LEADER_OR_FOLLOWER, as Kafka does (KIP-951)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sparklog.broker.share_fetch import _node_endpoints
from sparklog.metadata.image import BrokerRegistration, Endpoint
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import ShareFetchResponseResponsesPartitions


def test_leaders_of_not_leader_partitions_are_named() -> None:
    brokers = {
        2: BrokerRegistration(
            2, 1, b"\x00" * 16, (Endpoint("PLAINTEXT", "h2", 9092, 0),), rack="r1"
        ),
        3: BrokerRegistration(3, 1, b"\x00" * 16, (Endpoint("OTHER", "h3", 9093, 0),)),
    }
    ctx: Any = SimpleNamespace(image=SimpleNamespace(cluster=SimpleNamespace(broker=brokers.get)))
    partitions: list[ShareFetchResponseResponsesPartitions] = [
        {"error_code": int(ErrorCode.NOT_LEADER_OR_FOLLOWER), "current_leader": {"leader_id": 2}},
        {"error_code": int(ErrorCode.NOT_LEADER_OR_FOLLOWER), "current_leader": {"leader_id": 3}},
        {"error_code": 0, "current_leader": {"leader_id": 1}},
        {"error_code": int(ErrorCode.NOT_LEADER_OR_FOLLOWER), "current_leader": {"leader_id": -1}},
    ]
    assert _node_endpoints(ctx, "PLAINTEXT", partitions) == [
        {"node_id": 2, "host": "h2", "port": 9092, "rack": "r1"}
    ]
