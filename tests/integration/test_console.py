"""The web console on a real node, looked at with headless Chromium while a producer and a
consumer run: the figures on the pages are the ones the AdminClient computes, a missing topic
is a 404 that says so, and the record browser shows keys, values and headers.

Screenshots of the overview, a topic and a group page are written to the test's directory (and
to ``$SPARKLOG_CONSOLE_SCREENSHOTS`` when set, for a person to look at).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import NodeFactory, unique_topic
from tests.integration.node_harness import Node, free_port

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _screenshot(url: str, out: Path) -> None:
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--disable-dev-shm-usage",
            f"--screenshot={out}",
            "--window-size=1280,900",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    data = out.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 5000, f"{out}: not a page screenshot"
    keep = os.environ.get("SPARKLOG_CONSOLE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(keep) / out.name)


@pytest.fixture
def console_node(node_factory: NodeFactory) -> tuple[Node, str]:
    port = free_port()
    node = node_factory.create(
        {"sparklog.metrics.listener": f"127.0.0.1:{port}", "sparklog.console.enable": "true"}
    )
    return node, f"http://127.0.0.1:{port}/console"


@pytest.fixture
def live_traffic(console_node: tuple[Node, str]) -> Iterator[str]:
    """A producer and a consumer group running on their own topic for the whole test."""
    node, _ = console_node
    topic = unique_topic("live")
    stop = threading.Event()

    def produce() -> None:
        producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap})
        while not stop.is_set():
            producer.produce(topic, value=b"tick")
            producer.poll(0.05)
        producer.flush(10)

    def consume() -> None:
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": node.bootstrap,
                "group.id": f"{topic}-readers",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        while not stop.is_set():
            consumer.poll(0.2)
        consumer.close()

    threads = [threading.Thread(target=f, daemon=True) for f in (produce, consume)]
    for thread in threads:
        thread.start()
    yield topic
    stop.set()
    for thread in threads:
        thread.join(30)


def test_console_pages_show_what_the_admin_client_sees(
    console_node: tuple[Node, str], live_traffic: str, tmp_path: Path
) -> None:
    node, console = console_node
    topic, group = unique_topic("orders"), unique_topic("billing")
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": node.bootstrap})
    for future in admin.create_topics([confluent_kafka.admin.NewTopic(topic, 3, 1)]).values():
        future.result(30)
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5})
    for i in range(90):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"order {i}".encode(),
            partition=i % 3,
            headers=[("source", b"test")],
        )
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    # The group has read 10, 20 and 30 of each partition's 30 records: lags 20, 10, 0.
    consumer.commit(
        offsets=[confluent_kafka.TopicPartition(topic, p, 10 * (p + 1)) for p in range(3)],
        asynchronous=False,
    )
    consumer.close()

    tps = [confluent_kafka.TopicPartition(topic, p) for p in range(3)]
    ends = {
        tp.partition: f.result(30).offset
        for tp, f in admin.list_offsets(
            {tp: confluent_kafka.admin.OffsetSpec.latest() for tp in tps}
        ).items()
    }
    committed = admin.list_consumer_group_offsets(
        [confluent_kafka.ConsumerGroupTopicPartitions(group, tps)]
    )[group].result(30)
    admin_lag = {
        c.partition: ends[c.partition] - c.offset
        for c in committed.topic_partitions
        if c.offset >= 0
    }
    assert admin_lag == {0: 20, 1: 10, 2: 0}

    status, overview = _get(console)
    assert status == 200
    assert "data-broker='1'" in overview and "unfenced" in overview
    assert re.search(r"data-quorum-leader='1'", overview)

    status, topic_page = _get(f"{console}/topics/{topic}")
    assert status == 200
    shown_hw = {
        int(p): int(hw)
        for p, hw in re.findall(r"data-partition='(\d+)'.*?data-hw='(\d+)'", topic_page)
    }
    assert shown_hw == ends

    status, group_page = _get(f"{console}/groups/{group}")
    assert status == 200
    shown_lag = {
        int(p): int(lag)
        for p, lag in re.findall(
            rf"data-tp='{re.escape(topic)}-(\d+)'.*?data-lag='(\d+)'", group_page
        )
    }
    assert shown_lag == admin_lag
    assert f"data-total-lag='{sum(admin_lag.values())}'" in group_page

    # The live consumer joins its group in the background: wait for the page to list it.
    live_group = f"data-group='{live_traffic}-readers'"
    deadline = time.monotonic() + 90
    status, groups_page = _get(f"{console}/groups")
    while live_group not in groups_page and time.monotonic() < deadline:
        time.sleep(1)
        status, groups_page = _get(f"{console}/groups")
    assert status == 200 and live_group in groups_page, groups_page[-2000:]

    status, records = _get(f"{console}/topics/{topic}/partitions/0?offset=3&limit=5")
    assert status == 200
    assert re.findall(r"data-offset='(\d+)'", records) == ["3", "4", "5", "6", "7"]
    assert "order 9" in records and "k9" in records and "source" in records
    status, hex_page = _get(f"{console}/topics/{topic}/partitions/0?offset=0&limit=1&format=hex")
    assert status == 200 and "6f 72 64 65 72 20 30" in hex_page  # "order 0"

    status, missing = _get(f"{console}/topics/no-such-topic")
    assert status == 404 and "Topic &#x27;no-such-topic&#x27; does not exist." in missing
    status, _ = _get(f"{console}/groups/no-such-group")
    assert status == 404
    status, bad = _get(f"{console}/topics/{topic}/partitions/0?offset=ten")
    assert status == 400 and "offset must be a whole number" in bad

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (tests/run.sh installs it as root)")
    for name, url in (
        ("overview", console),
        ("topic", f"{console}/topics/{topic}"),
        ("group", f"{console}/groups/{group}"),
    ):
        _screenshot(url, tmp_path / f"console-{name}.png")
