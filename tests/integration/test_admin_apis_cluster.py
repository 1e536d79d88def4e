"""The admin APIs on a KRaft cluster (1 controller, 2 brokers): AlterConfigs sent to a broker is
forwarded to the controller and seen by every broker; DescribeTopicPartitions reports two
replicas; each broker's DescribeLogDirs lists its own replica; DescribeProducers is answered by
the leader and by the follower from its own producer state (Kafka's
Partition.activeProducerState: any replica with the log answers)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kafka")
pytest.importorskip("aiokafka")
pytest.importorskip("confluent_kafka")
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioType
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from tests.integration.cluster_harness import Cluster, partition_metadata, running_cluster

pytestmark = pytest.mark.integration

TIMEOUT_MS = 30_000
TIMINGS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "broker.heartbeat.interval.ms": 500,
}
TOPIC = "admin-replicated"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("admin-cluster")
    with running_cluster(root, controllers=1, brokers=2, overrides=TIMINGS) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        futures = admin.create_topics(
            [NewTopic(TOPIC, 1, 2, config={"retention.ms": "5000"})], operation_timeout=30
        )
        futures[TOPIC].result(timeout=60)
        deadline = time.monotonic() + 30
        while len(partition_metadata(cluster, TOPIC).isrs) < 2:
            assert time.monotonic() < deadline, "ISR never reached 2"
            time.sleep(0.2)
        yield cluster


def kp_admin(address: str) -> Any:
    return KafkaAdminClient(bootstrap_servers=address, request_timeout_ms=TIMEOUT_MS)


def overrides(address: str) -> dict[str, str]:
    admin = kp_admin(address)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
    finally:
        admin.close()
    return {key: entry["value"] for key, entry in described["topic"][TOPIC].items()}


def test_alter_configs_is_forwarded_and_seen_by_every_broker(cluster: Cluster) -> None:
    async def alter() -> Any:
        # Bootstrap on the second broker only: it forwards to the controller.
        admin = AIOKafkaAdminClient(
            bootstrap_servers=cluster.brokers[1].address, request_timeout_ms=TIMEOUT_MS
        )
        await admin.start()
        try:
            resource = AioConfigResource(AioType.TOPIC, TOPIC, {"max.message.bytes": "300000"})
            return await admin.alter_configs([resource])
        finally:
            await admin.close()

    [response] = asyncio.run(asyncio.wait_for(alter(), 60))
    [(code, message, _, _)] = response.resources
    assert code == 0, message
    for broker in cluster.brokers:
        deadline = time.monotonic() + 15
        while overrides(broker.address) != {"max.message.bytes": "300000"}:
            assert time.monotonic() < deadline, overrides(broker.address)
            time.sleep(0.2)


def test_replicas_log_dirs_and_producers(cluster: Cluster) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True}
    )
    for _ in range(20):
        producer.produce(TOPIC, value=b"v" * 50, partition=0)
    assert producer.flush(30) == 0

    admin = kp_admin(cluster.bootstrap_servers)
    try:
        [topic] = admin.describe_topic_partitions([TOPIC])["topics"]
        [partition] = topic["partitions"]
        leader = partition["leader_id"]
        assert sorted(partition["replica_nodes"]) == sorted(b.node_id for b in cluster.brokers)
        follower = next(b.node_id for b in cluster.brokers if b.node_id != leader)

        for entry in admin.describe_log_dirs({TOPIC: [0]}):
            [log_dir] = entry["log_dirs"]
            [listed] = [t for t in log_dir["topics"] if t["name"] == TOPIC]
            [replica] = listed["partitions"]
            assert replica["partition_size"] > 20 * 50, entry["broker"]

        tp = TopicPartition(TOPIC, 0)
        [active] = admin.describe_producers([tp])[tp].active_producers
        assert active.last_sequence == 19
        [on_follower] = admin.describe_producers([tp], broker_id=follower)[tp].active_producers
        assert (on_follower.producer_id, on_follower.last_sequence) == (active.producer_id, 19)
    finally:
        admin.close()
