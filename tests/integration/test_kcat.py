"""kcat (librdkafka's CLI) against a real sparklog node: metadata listing and consumption."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt kcat)"),
]

KCAT_TIMEOUT_S = 60.0


def kcat(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    kcat_path = shutil.which("kcat")
    assert kcat_path is not None
    return subprocess.run(
        [kcat_path, *args],
        input=stdin,
        capture_output=True,
        timeout=KCAT_TIMEOUT_S,
        check=False,
    )


def produce_lines(node: Node, topic: str, lines: list[str]) -> None:
    done = kcat(
        "-P", "-b", node.bootstrap, "-t", topic, "-p", "0", "-X", "topic.acks=1",
        stdin=("\n".join(lines) + "\n").encode(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")


def test_list_metadata_shows_broker_and_topic(node: Node) -> None:
    topic = unique_topic("kcat-meta")
    produce_lines(node, topic, ["warm-up"])  # auto-creates the topic
    done = kcat("-L", "-b", node.bootstrap, "-t", topic)
    out = done.stdout.decode(errors="replace")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert "1 brokers:" in out, out
    assert f"broker 1 at {node.bootstrap}" in out, out
    assert f'topic "{topic}" with 1 partitions:' in out, out
    assert "partition 0, leader 1" in out, out


def test_consume_partition_from_beginning(node: Node) -> None:
    topic = unique_topic("kcat-consume")
    values = [f"value-{index:05d}" for index in range(500)]
    produce_lines(node, topic, values)
    done = kcat(
        "-C", "-b", node.bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e",
        "-f", "%o %s\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    lines = done.stdout.decode().splitlines()
    assert lines == [f"{offset} {value}" for offset, value in enumerate(values)]


def test_consume_with_keys_and_headers(node: Node) -> None:
    topic = unique_topic("kcat-keys")
    done = kcat(
        "-P", "-b", node.bootstrap, "-t", topic, "-p", "0", "-K", ":", "-H", "h1=v1",
        stdin=b"k1:one\nk2:two\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    done = kcat(
        "-C", "-b", node.bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e",
        "-f", "%k|%s|%h\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.decode().splitlines() == ["k1|one|h1=v1", "k2|two|h1=v1"]
