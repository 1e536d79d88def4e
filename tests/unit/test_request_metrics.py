"""Histograms, labelled families, Kafka's request metrics and BrokerTopicMetrics, checked with a
real Prometheus parser (prometheus_client) as a scraper would read them."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from sparklog.broker.topic_metrics import BrokerTopicMetrics, count_records
from sparklog.metrics import Histogram, MetricsRegistry
from sparklog.net.request_metrics import RequestMetrics, count_errors
from sparklog.protocol.record_codec import build_batch


def _families(registry: MetricsRegistry) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(registry.to_prometheus()):
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            assert key not in out.setdefault(sample.name, {}), f"duplicate {sample.name} {key}"
            out[sample.name][key] = sample.value
    return out


def test_histogram_percentiles_follow_yammer_snapshot() -> None:
    histogram = Histogram(size=1000)
    assert histogram.value("99thPercentile") == 0.0
    for value in range(1, 1001):
        histogram.update(float(value))
    assert histogram.count == 1000
    assert histogram.value("Min") == 1.0 and histogram.value("Max") == 1000.0
    assert histogram.value("Mean") == 500.5
    assert histogram.value("50thPercentile") == 500.5
    assert 990.0 <= histogram.value("99thPercentile") <= 991.0
    assert histogram.value("999thPercentile") >= 999.0
    for _ in range(1000):  # the reservoir keeps the latest updates: now only slow requests
        histogram.update(5000.0)
    assert histogram.count == 2000
    assert histogram.value("50thPercentile") == 5000.0


def test_request_metrics_are_labelled_families_prometheus_parses() -> None:
    registry = MetricsRegistry()
    metrics = RequestMetrics(registry)
    produce_ok = {"responses": [{"name": "t", "partition_responses": [{"error_code": 0}] * 3}]}
    produce_bad = {
        "responses": [{"name": "t", "partition_responses": [{"error_code": 6}, {"error_code": 0}]}]
    }
    metrics.record("Produce", 11, produce_ok, queue_ms=1.0, local_ms=2.0, send_ms=0.5)
    metrics.record("Produce", 11, produce_bad, queue_ms=1.0, local_ms=4.0, send_ms=0.5)
    metrics.record("Produce", 9, None, queue_ms=0.0, local_ms=1.0, send_ms=0.0)  # acks=0
    fetch_name = metrics.request_name("Fetch", 1, {"replica_id": -1})
    follower_name = metrics.request_name("Fetch", 1, {"replica_state": {"replica_id": 2}})
    assert (fetch_name, follower_name) == ("FetchConsumer", "FetchFollower")
    metrics.record(
        fetch_name, 17, {"error_code": 0, "responses": []}, queue_ms=0, local_ms=1, send_ms=0
    )
    families = _families(registry)
    requests = families["kafka_network_RequestMetrics_RequestsPerSec_total"]
    assert requests[(("request", "Produce"), ("version", "11"))] == 2
    assert requests[(("request", "Produce"), ("version", "9"))] == 1
    assert requests[(("request", "FetchConsumer"), ("version", "17"))] == 1
    total = families["kafka_network_RequestMetrics_TotalTimeMs_Max"]
    assert total[(("request", "Produce"),)] == 5.5
    errors = families["kafka_network_RequestMetrics_ErrorsPerSec_total"]
    assert errors[(("error", "NONE"), ("request", "Produce"))] == 4
    assert errors[(("error", "NOT_LEADER_OR_FOLLOWER"), ("request", "Produce"))] == 1


def test_count_errors_reads_nested_entries_once() -> None:
    out: dict[int, int] = {}
    count_errors({"error_code": 0, "topics": [{"error_code": 3, "partitions": []}]}, out)
    assert out == {0: 1, 3: 1}


def test_broker_topic_metrics_all_topics_and_per_topic() -> None:
    registry = MetricsRegistry()
    topics = BrokerTopicMetrics(registry)
    batch = build_batch([(None, b"v" * 10)] * 7)
    assert count_records(batch * 2) == 14
    assert count_records(b"not a batch") == 0
    topics.produced("a", batch, len(batch))
    topics.produced("b", batch * 2, 2 * len(batch))
    topics.produce_failed("b")

    class Want:
        def __init__(self, topic: str) -> None:
            self.topic = topic

    topics.fetched_partitions(
        [(Want("a"), {"records": batch}), (Want("a"), {"records": b""})], follower=False
    )
    topics.fetched_partitions([(Want("b"), {"records": [batch]})], follower=True)
    assert topics.count("MessagesInPerSec") == 21
    assert topics.count("MessagesInPerSec", "b") == 14
    assert topics.count("TotalFetchRequestsPerSec", "a") == 2
    assert topics.count("BytesOutPerSec", "a") == len(batch)
    assert topics.count("ReplicationBytesOutPerSec", "b") == len(batch)
    assert topics.count("BytesOutPerSec", "b") == 0
    families = _families(registry)
    messages = families["kafka_server_BrokerTopicMetrics_MessagesInPerSec_total"]
    assert messages == {(): 21, (("topic", "a"),): 7, (("topic", "b"),): 14}
    assert (("topic", "b"),) in families[
        "kafka_server_BrokerTopicMetrics_BytesInPerSec_OneMinuteRate"
    ]
    topics.remove_topic("b")
    assert (("topic", "b"),) not in _families(registry)[
        "kafka_server_BrokerTopicMetrics_MessagesInPerSec_total"
    ]
