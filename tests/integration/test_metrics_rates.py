"""A node's Kafka meters are rates that follow the load, and its /metrics text parses as
Prometheus exposition (prometheus_client's parser, as a scraper reads it).

A producer sends at a low rate, then at a rate about twenty times higher; the per-topic
``MessagesInPerSec`` one-minute rate (an EWMA ticked every 5 s, as Yammer's) must rise with it,
while ``Count`` equals what was produced. Request metrics for Produce and FetchConsumer appear
with their time percentiles, labelled by request.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sparklog.cli.metrics_tool import fetch_metrics
from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import REPO_ROOT, free_port

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.integration

TOPIC_METRICS = "kafka.server:type=BrokerTopicMetrics"


def _produce_at(producer: object, topic: str, per_second: int, seconds: float) -> int:
    """Produce ``per_second`` records a second for ``seconds``, in 10 steps a second."""
    sent = 0
    step = max(per_second // 10, 1)
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        tick = time.monotonic()
        for _ in range(step):
            producer.produce(topic, value=b"x" * 100)  # type: ignore[attr-defined]
        sent += step
        producer.poll(0)  # type: ignore[attr-defined]
        time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
    assert producer.flush(30) == 0  # type: ignore[attr-defined]
    return sent


def test_rates_follow_the_load_and_prometheus_text_parses(node_factory: NodeFactory) -> None:
    port = free_port()
    node = node_factory.create({"sparklog.metrics.listener": f"127.0.0.1:{port}"})
    url = f"http://127.0.0.1:{port}"
    topic = unique_topic("rates")
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": node.bootstrap})
    for future in admin.create_topics([confluent_kafka.admin.NewTopic(topic, 1, 1)]).values():
        future.result(30)
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 20})
    mbean = f"{TOPIC_METRICS},name=MessagesInPerSec,topic={topic}"

    slow = _produce_at(producer, topic, 100, 12.0)
    low = fetch_metrics(url)[mbean]
    fast = _produce_at(producer, topic, 2000, 12.0)
    high = fetch_metrics(url)[mbean]

    assert low["Count"] == slow and high["Count"] == slow + fast
    assert 20.0 < low["OneMinuteRate"] < 400.0, low
    assert high["OneMinuteRate"] > 2.0 * low["OneMinuteRate"], (low, high)
    assert high["MeanRate"] > low["MeanRate"]

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": unique_topic("rates-group"),
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < slow + fast and time.monotonic() < deadline:
        got += len(consumer.consume(1000, 1.0))
    consumer.close()
    assert got == slow + fast

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            assert labels not in samples.setdefault(sample.name, {}), sample
            samples[sample.name][labels] = sample.value
    messages = samples["kafka_server_BrokerTopicMetrics_MessagesInPerSec_total"]
    assert messages[(("topic", topic),)] == slow + fast
    assert messages[()] >= slow + fast  # all topics: internal ones too
    bytes_out = samples["kafka_server_BrokerTopicMetrics_BytesOutPerSec_total"]
    assert bytes_out[(("topic", topic),)] >= 100 * (slow + fast)
    produce_p99 = samples["kafka_network_RequestMetrics_TotalTimeMs_99thPercentile"]
    assert produce_p99[(("request", "Produce"),)] > 0.0
    assert (("request", "FetchConsumer"),) in produce_p99
    requests = samples["kafka_network_RequestMetrics_RequestsPerSec_total"]
    assert sum(v for k, v in requests.items() if ("request", "Produce") in k) >= 1
    errors = samples["kafka_network_RequestMetrics_ErrorsPerSec_total"]
    assert errors[(("error", "NONE"), ("request", "Produce"))] >= 1


def test_consumer_lag_grows_after_the_consumer_stops(node_factory: NodeFactory) -> None:
    port = free_port()
    node = node_factory.create({"sparklog.metrics.listener": f"127.0.0.1:{port}"})
    url = f"http://127.0.0.1:{port}"
    topic, group = unique_topic("lag"), unique_topic("lag-group")
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": node.bootstrap})
    for future in admin.create_topics([confluent_kafka.admin.NewTopic(topic, 2, 1)]).values():
        future.result(30)
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5})
    for i in range(100):
        producer.produce(topic, value=b"v", partition=i % 2)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < 100 and time.monotonic() < deadline:
        got += len(consumer.consume(100, 1.0))
    assert got == 100
    consumer.commit(asynchronous=False)
    consumer.close()
    for i in range(30):  # the consumer is gone: 20 more on partition 0, 10 on partition 1
        producer.produce(topic, value=b"w", partition=0 if i < 20 else 1)
    assert producer.flush(30) == 0

    lag_bean = "sparklog:type=consumer-lag,name=records-lag"
    metrics = fetch_metrics(url)
    lags = {
        p: metrics[f"{lag_bean},group={group},topic={topic},partition={p}"]["Value"] for p in (0, 1)
    }
    assert lags == {0: 20, 1: 10}
    assert metrics[f"sparklog:type=consumer-lag,name=records-lag-max,group={group}"]["Value"] == 20
    # The same lag as the AdminClient computes (committed offsets vs. high watermarks).
    tps = [confluent_kafka.TopicPartition(topic, p) for p in (0, 1)]
    request = confluent_kafka.ConsumerGroupTopicPartitions(group, tps)
    committed = admin.list_consumer_group_offsets([request])[group].result(30)
    specs = {tp: confluent_kafka.admin.OffsetSpec.latest() for tp in tps}
    latest = {tp.partition: f.result(30).offset for tp, f in admin.list_offsets(specs).items()}
    admin_lag = {c.partition: latest[c.partition] - c.offset for c in committed.topic_partitions}
    assert admin_lag == lags

    # Every metric the shipped Grafana dashboard (deploy/grafana) queries is one this node
    # exposes, under that exact name.
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        exposed = {
            line.split()[2]
            for line in response.read().decode().splitlines()
            if line.startswith("# TYPE ")
        }
    dashboard = json.loads((REPO_ROOT / "deploy" / "grafana" / "sparklog-slis.json").read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        for name in re.findall(r"\b(?:kafka|sparklog)_[A-Za-z0-9_]+", target["expr"])
    }
    assert len(queried) >= 10
    assert queried <= exposed, sorted(queried - exposed)
