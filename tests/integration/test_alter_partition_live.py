"""AlterPartition over the wire, on a running combined node's controller listener.

A scripted second broker (id 7) registers and unfences itself on the controller listener, a
topic is created with it as leader, then it shrinks the ISR with AlterPartition v3: the change
commits through the ControllerDriver, the broker listener's Metadata shows it, a retry with the
old partition epoch and a request with a stale broker epoch are refused.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node, free_port

pytestmark = pytest.mark.integration

SCRIPTED_BROKER = 7


def _alter(
    broker_epoch: int, topic_id: bytes, isr: list[tuple[int, int]], partition_epoch: int
) -> dict[str, Any]:
    return {
        "broker_id": SCRIPTED_BROKER,
        "broker_epoch": broker_epoch,
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_epoch": 0,
                        "new_isr_with_epochs": [
                            {"broker_id": b, "broker_epoch": e} for b, e in isr
                        ],
                        "leader_recovery_state": 0,
                        "partition_epoch": partition_epoch,
                    }
                ],
            }
        ],
    }


def test_alter_partition_on_the_controller_listener(node: Node) -> None:
    with KafkaConnection(node.host, node.controller_port) as controller:
        assert controller.versions[56] == (2, 3)
        registered = controller.request(
            "BrokerRegistration",
            {
                "broker_id": SCRIPTED_BROKER,
                "cluster_id": node.cluster_id,
                "incarnation_id": uuid.uuid4().bytes,
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": "127.0.0.1",
                        "port": free_port(),
                        "security_protocol": 0,
                    }
                ],
                "features": [],
                "rack": None,
            },
        )
        assert registered["error_code"] == 0, registered
        epoch = int(registered["broker_epoch"])
        heartbeat = controller.request(
            "BrokerHeartbeat",
            {
                "broker_id": SCRIPTED_BROKER,
                "broker_epoch": epoch,
                "current_metadata_offset": epoch,
                "want_fence": False,
                "want_shut_down": False,
            },
        )
        assert heartbeat["error_code"] == 0 and not heartbeat["is_fenced"], heartbeat
        topic = unique_topic("alter-partition")
        created = controller.request(
            "CreateTopics",
            {
                "topics": [
                    {
                        "name": topic,
                        "num_partitions": -1,
                        "replication_factor": -1,
                        "assignments": [
                            {"partition_index": 0, "broker_ids": [SCRIPTED_BROKER, node.node_id]}
                        ],
                        "configs": [],
                    }
                ],
                "timeout_ms": 10_000,
                "validate_only": False,
            },
        )
        assert created["topics"][0]["error_code"] == 0, created
        topic_id = bytes(created["topics"][0]["topic_id"])

        stale = controller.request(
            "AlterPartition", _alter(epoch - 1, topic_id, [(SCRIPTED_BROKER, epoch)], 0)
        )
        assert stale["error_code"] == ErrorCode.STALE_BROKER_EPOCH and stale["topics"] == []

        body = _alter(epoch, topic_id, [(SCRIPTED_BROKER, epoch)], 0)
        response = controller.request("AlterPartition", body, version=3)
        assert response["error_code"] == 0
        result = response["topics"][0]["partitions"][0]
        assert result["error_code"] == 0, response
        assert (result["leader_id"], result["leader_epoch"]) == (SCRIPTED_BROKER, 0)
        assert (result["isr"], result["partition_epoch"]) == ([SCRIPTED_BROKER], 1)

        retried = controller.request("AlterPartition", body, version=3)
        assert (
            retried["topics"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_UPDATE_VERSION
        )

    # The committed change reaches the broker side's metadata image.
    deadline = time.monotonic() + 10
    with KafkaConnection(node.host, node.port) as broker:
        while True:
            metadata = broker.request(
                "Metadata", {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
            )
            partition = metadata["topics"][0]["partitions"][0]
            if partition["isr_nodes"] == [SCRIPTED_BROKER] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert partition["isr_nodes"] == [SCRIPTED_BROKER]
    assert partition["leader_id"] == SCRIPTED_BROKER
