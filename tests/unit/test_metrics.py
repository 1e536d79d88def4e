"""The metrics registry, its HTTP listener and the ``sparklog metrics`` CLI, over a real socket."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sparklog.cli.main import main
from sparklog.cli.metrics_tool import MetricsToolError, fetch_metrics, format_lines, select
from sparklog.metrics import LatencyWindow, Meter, MetricName, MetricsRegistry
from sparklog.net.metrics_http import MetricsListenerError, parse_listener, start_metrics_server

ACTIVE = MetricName.yammer("kafka.controller", "KafkaController", "ActiveControllerCount")
LEADER = MetricName.kafka("kafka.server", "raft-metrics", "current-leader")
STATE = MetricName.kafka("kafka.server", "raft-metrics", "current-state")


def test_registry_reads_gauges_live_and_renders_both_formats() -> None:
    registry = MetricsRegistry()
    box = {"active": 0}
    registry.gauge(ACTIVE, lambda: box["active"])
    registry.gauge(LEADER, lambda: 3)
    registry.gauge(STATE, lambda: 'lea"der')
    registry.gauge(MetricName.kafka("x", "y", "broken"), lambda: 1 // 0)
    counter = registry.counter(
        MetricName.yammer("kafka.controller", "KafkaController", "Timed", attribute="Count")
    )
    counter.inc(2)
    with pytest.raises(ValueError):
        counter.inc(-1)
    assert registry.value(ACTIVE) == 0
    box["active"] = 1
    assert registry.to_json() == {
        "kafka.controller:type=KafkaController,name=ActiveControllerCount": {"Value": 1},
        "kafka.controller:type=KafkaController,name=Timed": {"Count": 2},
        "kafka.server:type=raft-metrics": {"current-leader": 3, "current-state": 'lea"der'},
    }
    text = registry.to_prometheus()
    assert "# TYPE kafka_controller_KafkaController_ActiveControllerCount gauge" in text
    assert "\nkafka_controller_KafkaController_ActiveControllerCount 1\n" in text
    assert "# TYPE kafka_controller_KafkaController_Timed counter" in text
    assert "\nkafka_server_raft_metrics_current_leader 3\n" in text
    assert 'kafka_server_raft_metrics_current_state{value="lea\\"der"} 1' in text
    assert "broken" not in text
    registry.remove(LEADER)
    assert registry.value(LEADER) is None


def test_latency_window() -> None:
    window = LatencyWindow(size=2)
    assert window.average_ms == 0.0 and window.max_ms == 0.0
    for latency in (10.0, 2.0, 4.0):
        window.record(latency)
    assert math.isclose(window.average_ms, 3.0) and window.max_ms == 4.0


@pytest.mark.parametrize("bad", ["", "localhost", "host:x", "host:70000", ":"])
def test_bad_listener_is_rejected(bad: str) -> None:
    with pytest.raises(MetricsListenerError, match=r"sparklog\.metrics\.listener"):
        parse_listener(bad)


def test_listener_forms() -> None:
    assert parse_listener("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listener("[::1]:9404") == ("::1", 9404)
    assert parse_listener(":9404") == ("0.0.0.0", 9404)


class _ServerThread:
    """A metrics listener on its own loop so the blocking CLI can call it."""

    def __init__(self, registry: MetricsRegistry) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            start_metrics_server(registry, "127.0.0.1:0"), self.loop
        ).result(10)

    @property
    def url(self) -> str:
        return self.server.url

    def raw(self, request: bytes) -> bytes:
        async def exchange() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.server.port)
            writer.write(request)
            await writer.drain()
            data = await reader.read()
            writer.close()
            return data

        return asyncio.run_coroutine_threadsafe(exchange(), self.loop).result(10)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture()
def served() -> Iterator[_ServerThread]:
    registry = MetricsRegistry()
    registry.gauge(ACTIVE, lambda: 1)
    registry.gauge(LEADER, lambda: 2)
    server = _ServerThread(registry)
    try:
        yield server
    finally:
        server.close()


def test_http_routes(served: _ServerThread) -> None:
    text = served.raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = text.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"version=0.0.4" in head
    assert b"kafka_server_raft_metrics_current_leader 2" in body
    for target in (b"/metrics.json", b"/metrics?format=json"):
        head, _, body = served.raw(b"GET " + target + b" HTTP/1.0\r\n\r\n").partition(b"\r\n\r\n")
        assert b"application/json" in head
        assert json.loads(body)["kafka.server:type=raft-metrics"] == {"current-leader": 2}
    assert served.raw(b"GET /nope HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404")
    assert served.raw(b"POST /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405")
    assert served.raw(b"garbage\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert served.raw(b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    head = served.raw(b"HEAD /metrics HTTP/1.1\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n")


def test_cli_prints_filters_and_fails_cleanly(
    served: _ServerThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["metrics", "--url", served.url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "kafka.controller:type=KafkaController,name=ActiveControllerCount 1" in out
    assert "kafka.server:type=raft-metrics current-leader 2" in out
    assert main(["metrics", "--url", served.url.removeprefix("http://"), "--filter", "LEADER"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "kafka.server:type=raft-metrics current-leader 2"
    ]
    assert main(["metrics", "--url", served.url, "--filter", "activecontroller", "--json"]) == 0
    parsed: Any = json.loads(capsys.readouterr().out)
    assert parsed == {
        "kafka.controller:type=KafkaController,name=ActiveControllerCount": {"Value": 1}
    }
    # A port nobody listens on, and a non-http URL: one-line errors, exit status 1.
    port = served.server.port
    served.close()
    assert main(["metrics", "--url", f"http://127.0.0.1:{port}", "--timeout", "2"]) == 1
    assert "cannot read metrics" in capsys.readouterr().err
    with pytest.raises(MetricsToolError, match="http://"):
        fetch_metrics("file:///etc/passwd")


def test_select_and_format() -> None:
    metrics: dict[str, dict[str, Any]] = {
        "kafka.server:type=raft-metrics": {"high-watermark": 5, "current-state": "leader"},
        "kafka.controller:type=KafkaController,name=FencedBrokerCount": {"Value": 1},
    }
    assert format_lines(select(metrics, ["fenced", "state"])) == [
        "kafka.controller:type=KafkaController,name=FencedBrokerCount 1",
        "kafka.server:type=raft-metrics current-state leader",
    ]


class _FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_meter_counts_and_rates_per_second() -> None:
    clock = _FakeClock()
    meter = Meter(clock)
    assert meter.rate("OneMinuteRate") == 0.0
    for _ in range(60):  # 100 events/s for 5 minutes
        meter.mark(500)
        clock.now += 5.0
    assert meter.count == 30_000
    assert meter.rate("OneMinuteRate") == pytest.approx(100.0, rel=1e-6)
    assert meter.rate("FiveMinuteRate") == pytest.approx(100.0, rel=0.01)
    assert meter.rate("MeanRate") == pytest.approx(100.0, rel=1e-6)
    clock.now += 300.0  # idle for 5 minutes: the one-minute rate decays, the count stays
    assert meter.rate("OneMinuteRate") < 1.0
    assert meter.rate("FifteenMinuteRate") > meter.rate("OneMinuteRate")
    assert meter.count == 30_000


def test_registered_meter_has_yammer_attributes_and_distinct_prometheus_names() -> None:
    registry = MetricsRegistry()
    copied = registry.meter("kafka.server", "BrokerTopicMetrics", "RemoteCopyBytesPerSec")
    registry.meter("kafka.server", "BrokerTopicMetrics", "RemoteFetchBytesPerSec")
    copied.mark(42)
    values = registry.to_json()["kafka.server:type=BrokerTopicMetrics,name=RemoteCopyBytesPerSec"]
    assert set(values) == {
        "Count",
        "OneMinuteRate",
        "FiveMinuteRate",
        "FifteenMinuteRate",
        "MeanRate",
    }
    assert values["Count"] == 42
    text = registry.to_prometheus()
    assert "kafka_server_BrokerTopicMetrics_RemoteCopyBytesPerSec 42" in text
    assert "kafka_server_BrokerTopicMetrics_RemoteCopyBytesPerSec_OneMinuteRate" in text
    assert "kafka_server_BrokerTopicMetrics_RemoteFetchBytesPerSec_OneMinuteRate" in text
