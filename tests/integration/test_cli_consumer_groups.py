"""``sparklog consumer-groups`` against a real node, compared with kafka-consumer-groups.sh's
columns and wording: lag after a consumer stops, describe of an active group (classic and
KIP-848), reset-offsets (dry run, then execute) and a consumer resuming where it was reset,
delete-offsets and delete."""

from __future__ import annotations

import time

import pytest

from tests.integration.cli_support import CliRun, assert_no_traceback, sparklog
from tests.integration.conftest import unique_topic
from tests.integration.node_harness import Node

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration

OFFSETS_HEADER = [
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
]


@pytest.fixture(scope="module")
def node(module_node: Node) -> Node:
    return module_node


def groups(node: Node, *args: str) -> CliRun:
    run = sparklog("consumer-groups", "--bootstrap-server", node.bootstrap, *args)
    assert_no_traceback(run)
    return run


def produce(node: Node, topic: str, per_partition: int, partitions: int) -> None:
    producer = ck.Producer({"bootstrap.servers": node.bootstrap})
    for i in range(per_partition * partitions):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def consumer(node: Node, group: str, protocol: str) -> object:
    return ck.Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": "groups-test",
        }
    )


def consume(node: Node, topic: str, group: str, count: int, protocol: str) -> list[tuple[int, int]]:
    """Read ``count`` records, commit them, close; the (partition, offset) of each."""
    c = consumer(node, group, protocol)
    c.subscribe([topic])  # type: ignore[attr-defined]
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    while len(seen) < count and time.monotonic() < deadline:
        m = c.poll(0.5)  # type: ignore[attr-defined]
        if m is not None and not m.error():
            seen.append((m.partition(), m.offset()))
    c.commit(asynchronous=False)  # type: ignore[attr-defined]
    c.close()  # type: ignore[attr-defined]
    return seen


def table(run: CliRun) -> list[list[str]]:
    """The rows of Kafka's table (after its header), split on whitespace."""
    lines = run.lines()
    at = next(i for i, line in enumerate(lines) if line.startswith("GROUP "))
    return [line.split() for line in lines[at + 1 :] if line.strip()]


def offsets_rows(run: CliRun) -> dict[int, list[str]]:
    return {int(row[2]): row for row in table(run)}


def create(node: Node, topic: str, partitions: int) -> None:
    run = sparklog("topics", "--bootstrap-server", node.bootstrap, "--create", "--topic", topic,
                   "--partitions", str(partitions))  # fmt: skip
    assert run.status == 0, run.err


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_lag_after_consumer_stops_then_reset_and_resume(node: Node, protocol: str) -> None:
    topic, group = unique_topic("lag"), unique_topic(f"g-{protocol}")
    create(node, topic, 1)
    produce(node, topic, 10, 1)
    assert len(consume(node, topic, group, 4, protocol)) == 4

    described = groups(node, "--describe", "--group", group)
    lines = described.lines()
    # Kafka: a blank line, the no-members notice, a blank line, then the table.
    # Kafka: the notice on stderr; on stdout a blank line, then the table.
    assert described.err == f"\nConsumer group '{group}' has no active members.\n"
    assert lines[0] == "" and lines[1].split() == OFFSETS_HEADER
    # Kafka's %-Ns columns: at least 15 wide, wider for a longer value, one space between.
    assert lines[1].startswith("GROUP".ljust(max(15, len(group))) + " TOPIC")
    assert offsets_rows(described)[0] == [group, topic, "0", "4", "10", "6", "-", "-", "-"]

    listed = groups(node, "--list", "--state", "--type")
    assert listed.lines()[0].split() == ["GROUP", "TYPE", "STATE"]
    kind = "Classic" if protocol == "classic" else "Consumer"
    assert [group, kind, "Empty"] in [line.split() for line in listed.lines()]

    dry = groups(node, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "7")
    assert "WARN: No action will be performed as the --execute option is missing" in dry.err
    assert dry.lines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert table(dry) == [[group, topic, "0", "7"]]
    assert offsets_rows(groups(node, "--describe", "--group", group))[0][3] == "4"  # unchanged

    done = groups(node, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset",
                  "7", "--execute")  # fmt: skip
    assert done.err == "" and table(done) == [[group, topic, "0", "7"]]
    assert offsets_rows(groups(node, "--describe", "--group", group))[0][3:6] == ["7", "10", "3"]

    resumed = consume(node, topic, group, 3, protocol)
    assert [offset for _, offset in resumed] == [7, 8, 9]  # resumes where it was reset
    assert offsets_rows(groups(node, "--describe", "--group", group))[0][5] == "0"

    earliest = groups(node, "--reset-offsets", "--group", group, "--all-topics",
                      "--to-earliest", "--dry-run")  # fmt: skip
    assert earliest.err == "" and table(earliest) == [[group, topic, "0", "0"]]
    shifted = groups(node, "--reset-offsets", "--group", group, "--all-topics", "--shift-by",
                     "5", "--dry-run")  # fmt: skip
    assert table(shifted) == [[group, topic, "0", "10"]]
    assert "New offset (15) is higher than latest offset" in shifted.err
    dated = groups(node, "--reset-offsets", "--group", group, "--all-topics", "--to-datetime",
                   "2000-01-01T00:00:00.000", "--dry-run")  # fmt: skip
    assert table(dated) == [[group, topic, "0", "0"]]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_active_group_members_state_and_reset_refused(node: Node, protocol: str) -> None:
    topic, group = unique_topic("act"), unique_topic(f"a-{protocol}")
    create(node, topic, 2)
    produce(node, topic, 3, 2)
    c = consumer(node, group, protocol)
    c.subscribe([topic])  # type: ignore[attr-defined]
    try:
        deadline = time.monotonic() + 60
        rows: dict[int, list[str]] = {}
        while time.monotonic() < deadline:
            c.poll(0.2)  # type: ignore[attr-defined]
            run = groups(node, "--describe", "--group", group)
            if (
                run.status == 0
                and "no active members" not in run.err
                and "rebalancing" not in run.err
            ):
                rows = offsets_rows(run)
                if len(rows) == 2 and all(r[6] != "-" for r in rows.values()):
                    break
        assert sorted(rows) == [0, 1], rows
        assert all(r[-1] == "groups-test" for r in rows.values())
        members = groups(node, "--describe", "--group", group, "--members", "--verbose")
        assert members.lines()[1].split() == [
            "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
            "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT",
        ]  # fmt: skip
        (member,) = table(members)
        assert member[0] == group and "2" in member and f"{topic}:0,1" in member
        state = groups(node, "--describe", "--group", group, "--state")
        assert state.lines()[1].split()[:3] == ["GROUP", "COORDINATOR", "(ID)"]
        assert table(state)[0][-2:] == ["Stable", "1"]
        refused = groups(node, "--reset-offsets", "--group", group, "--all-topics",
                         "--to-earliest", "--execute")  # fmt: skip
        assert refused.status == 1
        assert refused.err.strip() == (
            f"Error: Assignments can only be reset if the group '{group}' is inactive, but the "
            "current state is Stable."
        )
        delete = groups(node, "--delete", "--group", group)
        assert (
            delete.status == 1 and f"* Group '{group}' could not be deleted due to:" in delete.out
        )
    finally:
        c.close()  # type: ignore[attr-defined]


def test_delete_offsets_and_delete(node: Node) -> None:
    topic, group = unique_topic("del"), unique_topic("gdel")
    create(node, topic, 1)
    produce(node, topic, 5, 1)
    consume(node, topic, group, 5, "classic")
    run = groups(node, "--delete-offsets", "--group", group, "--topic", topic)
    assert run.lines()[0] == f"Request succeed for deleting offsets from group {group}."
    assert [line.split() for line in run.lines()[2:]] == [
        ["TOPIC", "PARTITION", "STATUS"], [topic, "0", "Successful"]
    ]  # fmt: skip
    assert groups(node, "--delete", "--group", group).out == (
        f"Deletion of requested consumer groups ('{group}') was successful.\n"
    )
    missing = groups(node, "--describe", "--group", group)
    assert missing.status == 1
    assert missing.out == f"\nError: Consumer group '{group}' does not exist.\n"
