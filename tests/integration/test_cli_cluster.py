"""Every operator tool against 3 controllers + 3 brokers (one module-scoped cluster), with the
output Kafka's tools print for the same state (the literals of kafka_tool_output): topics (create,
describe, alter, --if-exists, delete; a controller port refused), consumer-groups lag after a
consumer stops, reset-offsets and a consumer resuming there (classic and KIP-848), --state with
the group's coordinator, configs, get-offsets across leaders, log-dirs and features of every
node, metadata-quorum at the controllers (and through a broker), leader-election and
reassign-partitions, transactions (list, describe at the coordinator, describe-producers on
leader and followers, find-hanging, abort), console producer/consumer, the perf tools,
delete-records across leaders, acls (added through one broker, listed by each), share-groups
(list, members, state at the coordinator, offsets, reset, delete), storage info.

The cluster runs the StandardAuthorizer with the (plaintext, ANONYMOUS) clients as super users,
so the acls tool has an authorizer to talk to and nothing is refused."""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest

from tests.integration import kafka_tool_output as kafka
from tests.integration.cli_support import (
    CliRun,
    assert_no_traceback,
    cells,
    sparklog,
)
from tests.integration.cli_support import tool as cli_tool
from tests.integration.cluster_harness import Cluster, running_cluster, wait_until
from tests.integration.conftest import unique_topic

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.integration

T = TypeVar("T")
BROKERS = [101, 102, 103]
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("cli-cluster")
    overrides = {
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:ANONYMOUS",
        "group.share.enable": "true",  # share groups on (KIP-932) for share-groups
    }
    with running_cluster(root, controllers=3, brokers=3, overrides=overrides) as cluster:
        yield cluster


def tool(cluster: Cluster, *args: str, stdin: str | None = None) -> CliRun:
    return cli_tool(cluster.bootstrap_servers, *args, stdin=stdin)


def at_controllers(cluster: Cluster, command: str, *args: str) -> CliRun:
    controllers = ",".join(c.address for c in cluster.controllers)
    run = sparklog(command, "--bootstrap-controller", controllers, *args)
    assert_no_traceback(run)
    return run


def create(cluster: Cluster, prefix: str, partitions: int, rf: int = 3) -> str:
    topic = unique_topic(prefix)
    run = tool(cluster, "topics", "--create", "--topic", topic, "--partitions", str(partitions),
               "--replication-factor", str(rf))  # fmt: skip
    assert run.out == f"Created topic {topic}.\n", run.err
    return topic


def produce(cluster: Cluster, topic: str, count: int, partitions: int) -> None:
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def described(cluster: Cluster, topic: str) -> tuple[str, list[dict[str, str]]]:
    """``topics --describe``: the topic line and each partition line's fields."""
    lines = tool(cluster, "topics", "--describe", "--topic", topic).lines()
    rows = [kafka.PARTITION_LINE.fullmatch(line) for line in lines[1:]]
    assert all(rows), lines
    return lines[0], [row.groupdict() for row in rows if row]


def until(what: str, get: Callable[[], T], ok: Callable[[T], bool]) -> T:
    """``get()`` polled (with a deadline) until ``ok`` holds for what it returns."""
    found: list[T] = []

    def check() -> bool:
        value = get()
        found[:] = [value]
        return ok(value)

    wait_until(what, check)
    return found[0]


def test_topics_at_a_controller_port(cluster: Cluster) -> None:
    run = sparklog("topics", "--bootstrap-server", cluster.controllers[0].address, "--list")
    assert_no_traceback(run)
    assert run.status == 1 and "is a controller listener, not a broker's" in run.err


def test_topics_describe_alter_delete(cluster: Cluster) -> None:
    topic = create(cluster, "cl-topic", partitions=3)
    exists = tool(cluster, "topics", "--create", "--topic", topic, "--partitions", "3")
    # TopicExistsException's message, after TopicCommand's prefix
    assert exists.status == 1
    assert (
        exists.err.strip()
        == f"Error while executing topic command : Topic '{topic}' already exists."
    )
    assert tool(cluster, "topics", "--create", "--topic", topic, "--if-not-exists").out == ""
    line, partitions = described(cluster, topic)
    pattern = re.escape(kafka.TOPIC_LINE.format(topic=topic, topic_id="TOPICID", partitions=3, rf=3,
                                          configs="")).replace("TOPICID", r"[\w-]{22}")  # fmt: skip
    assert re.fullmatch(pattern, line), line
    assert [p["partition"] for p in partitions] == ["0", "1", "2"]
    # Replicas spread over the three brokers, one preferred leader on each.
    assert all(sorted(map(int, p["replicas"].split(","))) == BROKERS for p in partitions)
    assert sorted(int(p["leader"]) for p in partitions) == BROKERS
    assert all(p["elr"] == "" and p["last_known_elr"] == "" for p in partitions)
    assert tool(cluster, "configs", "--alter", "--topic", topic, "--add-config",
                "retention.ms=86400000").status == 0  # fmt: skip
    assert tool(cluster, "topics", "--alter", "--topic", topic, "--partitions", "5").out == ""
    line, _ = until(
        "every broker sees five partitions and the override",
        lambda: described(cluster, topic),
        lambda d: len(d[1]) == 5 and "Configs: retention.ms=" in d[0],
    )
    assert line.endswith(
        "\tPartitionCount: 5\tReplicationFactor: 3\tConfigs: retention.ms=86400000"
    )
    # TopicCommand.DescribeOptions filters: every ISR is full, three replicas each.
    only = ("topics", "--describe", "--topic", topic)
    assert tool(cluster, *only, "--under-replicated-partitions").out == ""
    assert tool(cluster, *only, "--under-min-isr-partitions").out == ""
    assert len(tool(cluster, *only, "--topics-with-overrides").lines()) == 1
    for action in ("--describe", "--delete"):
        quiet = tool(cluster, "topics", action, "--topic", "no-such-topic", "--if-exists")
        assert (quiet.status, quiet.out) == (0, "")
    assert tool(cluster, "topics", "--delete", "--topic", topic).status == 0
    wait_until("the topic is gone", lambda: topic not in tool(cluster, "topics", "--list").lines())
    gone = tool(cluster, "topics", "--delete", "--topic", topic)
    assert gone.status == 1
    assert gone.err.strip() == (
        f"Error while executing topic command : Topic '{topic}' does not exist as expected"
    )


def consume_and_commit(
    cluster: Cluster, topic: str, group: str, protocol: str, count: int
) -> list[tuple[int, int]]:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    while len(seen) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen.append((message.partition(), message.offset()))
    consumer.commit(asynchronous=False)
    consumer.close()
    return seen


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_groups_lag_reset_and_resume(cluster: Cluster, protocol: str) -> None:
    group = unique_topic(f"cl-{protocol}")
    topic = create(cluster, "cl-lag", partitions=3)
    produce(cluster, topic, 30, 3)
    assert len(consume_and_commit(cluster, topic, group, protocol, 30)) == 30
    rows = wait_until(
        "the committed offsets show",
        lambda: [
            line.split()
            for line in tool(cluster, "consumer-groups", "--describe", "--group", group).lines()[2:]
        ],
    )
    # ConsumerGroupCommand: lag after the consumer stopped, '-' for the member columns.
    assert [r[1:] for r in rows] == [
        [topic, str(p), "10", "10", "0", "-", "-", "-"] for p in range(3)
    ]
    # Each broker lists only the groups it coordinates: the tool asks all of them.
    assert group in tool(cluster, "consumer-groups", "--list").lines()
    state = tool(cluster, "consumer-groups", "--describe", "--group", group, "--state").lines()
    assert state[1].split()[:3] == ["GROUP", "COORDINATOR", "(ID)"]
    row = state[2].split()
    # The coordinator column names the broker FindCoordinator answered, host:port and (id).
    address = {b.node_id: b.address for b in cluster.brokers}
    coordinator_id = int(row[2].strip("()"))
    assert row[1] == address[coordinator_id] and row[-2:] == ["Empty", "0"]
    reset = tool(cluster, "consumer-groups", "--reset-offsets", "--group", group, "--topic",
                 f"{topic}:1", "--to-offset", "4", "--execute")  # fmt: skip
    assert [line.split() for line in reset.lines()[2:]] == [[group, topic, "1", "4"]]
    lag = wait_until(
        "the reset shows as lag",
        lambda: [
            line.split()[5]
            for line in tool(cluster, "consumer-groups", "--describe", "--group", group).lines()[2:]
        ],
    )
    assert lag == ["0", "6", "0"]
    resumed = consume_and_commit(cluster, topic, group, protocol, 6)
    # Partition 1 resumes at the reset offset 4 (v13 ... v28); the others have nothing new.
    assert sorted(resumed) == [(1, offset) for offset in range(4, 10)]
    after = tool(cluster, "consumer-groups", "--describe", "--group", group).lines()[2:]
    assert [line.split()[3:6] for line in after] == [["10", "10", "0"]] * 3


def test_configs_offsets_log_dirs_features(cluster: Cluster) -> None:
    topic = create(cluster, "cl-cfg", partitions=3, rf=2)
    assert tool(cluster, "configs", "--alter", "--topic", topic, "--add-config",
                "retention.ms=5000000").status == 0  # fmt: skip
    configs = wait_until(
        "the config reaches the broker asked",
        lambda: [
            line
            for line in tool(cluster, "configs", "--describe", "--topic", topic).lines()
            if "retention.ms=5000000" in line
        ],
    )
    assert configs[0].startswith("  retention.ms=5000000 sensitive=false synonyms={")
    brokers = tool(cluster, "configs", "--describe", "--entity-type", "brokers").lines()
    assert brokers == [f"Dynamic configs for broker {b} are:" for b in BROKERS]
    produce(cluster, topic, 9, 3)
    # GetOffsetShell's topic:partition:offset, each partition asked of its own leader.
    assert tool(cluster, "get-offsets", "--topic", topic).lines() == [
        f"{topic}:{p}:3" for p in range(3)
    ]
    log_dirs = tool(cluster, "log-dirs", "--describe", "--topic-list", topic)
    assert log_dirs.lines()[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 101,102,103",
    ]
    document = json.loads(log_dirs.lines()[2])
    assert [b["broker"] for b in document["brokers"]] == BROKERS
    replicas = [p["partition"] for b in document["brokers"] for d in b["logDirs"]
                for p in d["partitions"]]  # fmt: skip
    assert len(replicas) == 6  # 3 partitions x RF 2
    at_broker = tool(cluster, "features", "describe").lines()
    at_controller = at_controllers(cluster, "features", "describe").lines()
    assert all(kafka.FEATURE_LINE.fullmatch(line) for line in at_broker + at_controller)
    names = [kafka.FEATURE_LINE.fullmatch(line).group("name") for line in at_broker]  # type: ignore[union-attr]
    assert "metadata.version" in names
    assert [line.split("\t")[:4] for line in at_controller] == [
        line.split("\t")[:4] for line in at_broker
    ]


def test_metadata_quorum(cluster: Cluster) -> None:
    status = at_controllers(cluster, "metadata-quorum", "describe", "--status")
    assert status.status == 0, status.err
    assert [line[:24] for line in status.lines()] == [
        f"{n + ':':<24}" for n in kafka.QUORUM_STATUS_NAMES
    ]
    fields = {line[:24].strip()[:-1]: line[24:] for line in status.lines()}
    assert fields["ClusterId"] == cluster.cluster_id
    voters = json.loads(fields["CurrentVoters"])
    assert sorted(v["id"] for v in voters) == [1, 2, 3]
    assert all(v["endpoints"] == [f"CONTROLLER://{cluster.controller(v['id']).address}"]
               for v in voters)  # fmt: skip
    assert sorted(o["id"] for o in json.loads(fields["CurrentObservers"])) == BROKERS
    via_broker = tool(cluster, "metadata-quorum", "describe", "--status")
    assert via_broker.lines()[0] == status.lines()[0]
    replication = at_controllers(cluster, "metadata-quorum", "describe", "--replication").lines()
    assert cells(replication[0]) == kafka.QUORUM_REPLICATION_HEADER
    rows = [cells(line) for line in replication[1:]]
    # The leader, the other voters, then the observers (the three brokers).
    assert [row[6] for row in rows] == ["Leader", "Follower", "Follower"] + ["Observer"] * 3
    assert int(rows[0][0]) == int(fields["LeaderId"])
    assert sorted(int(row[0]) for row in rows[3:]) == BROKERS


def test_reassignment_then_preferred_election(cluster: Cluster, tmp_path: Path) -> None:
    topic = create(cluster, "cl-move", partitions=1)
    (partition,) = described(cluster, topic)[1]
    replicas = [int(b) for b in partition["replicas"].split(",")]
    moved = replicas[1:] + replicas[:1]  # another preferred leader, same replica set
    spec = tmp_path / "move.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": moved}]}))  # fmt: skip
    base = ("reassign-partitions", "--reassignment-json-file", str(spec))
    executed = tool(cluster, *base, "--execute").lines()
    assert json.loads(executed[2])["partitions"][0]["replicas"] == replicas
    assert executed[-1] == kafka.REASSIGN_STARTED.format(partition=f"{topic}-0")
    verified = until(
        "the reassignment completes",
        lambda: tool(cluster, *base, "--verify").lines(),
        lambda out: kafka.REASSIGN_DONE.format(partition=f"{topic}-0") in out,
    )
    assert verified == [
        kafka.REASSIGN_STATUS,
        kafka.REASSIGN_DONE.format(partition=f"{topic}-0"),
        kafka.REASSIGN_CLEARING[0].format(s="s", brokers="101,102,103"),
        kafka.REASSIGN_CLEARING[1].format(topic=topic),
    ]
    assert tool(cluster, "reassign-partitions", "--list").lines() == [
        "No partition reassignments found."
    ]
    elect = (
        "leader-election",
        "--election-type",
        "PREFERRED",
        "--topic",
        topic,
        "--partition",
        "0",
    )
    first = until(
        "the new preferred leader is elected",
        lambda: tool(cluster, *elect),
        lambda run: run.status == 0,
    )
    assert first.lines() in (
        [kafka.ELECTION_DONE.format(partitions=f"{topic}-0")],
        [
            kafka.ELECTION_NOT_NEEDED.format(partitions=f"{topic}-0")
        ],  # the controller got there first
    )
    assert tool(cluster, *elect).lines() == [
        kafka.ELECTION_NOT_NEEDED.format(partitions=f"{topic}-0")
    ]
    assert described(cluster, topic)[1][0]["leader"] == str(moved[0])


def test_transactions_tools(cluster: Cluster) -> None:
    topic = create(cluster, "cl-txn", partitions=1)
    txn_id = unique_topic("cl-txid")
    producer = ck.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"x")
    producer.flush(30)
    try:
        # DescribeTransactions goes to the id's coordinator, wherever it is.
        header, row = tool(
            cluster, "transactions", "describe", "--transactional-id", txn_id
        ).lines()
        assert cells(header)[:2] == ["CoordinatorId", "TransactionalId"]
        assert int(cells(row)[0]) in BROKERS and cells(row)[4] == "Ongoing"
        listed = [cells(line) for line in tool(cluster, "transactions", "list").lines()]
        assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        assert [r[3] for r in listed if r[0] == txn_id] == ["Ongoing"]
        # The leader's and every follower's producer state (Kafka asks the leader by default).
        for broker in [None, *BROKERS]:
            flags = [] if broker is None else ["--broker-id", str(broker)]
            producers = until(
                f"the producer state on {broker or 'the leader'}",
                partial(tool, cluster, "transactions", "describe-producers", "--topic", topic,
                        "--partition", "0", *flags),
                lambda run: len(run.lines()) == 2,
            ).lines()  # fmt: skip
            assert cells(producers[0]) == kafka.PRODUCERS_HEADER
            assert cells(producers[1])[5] == "0"
        for scope in (["--topic", topic], ["--broker-id", "101"]):
            hanging = tool(cluster, "transactions", "find-hanging", *scope,
                           "--max-transaction-timeout", "0").lines()  # fmt: skip
            assert [cells(line) for line in hanging] == [kafka.HANGING_HEADER]  # known: not hanging
        aborted = tool(cluster, "transactions", "abort", "--topic", topic, "--partition", "0",
                       "--start-offset", "0")  # fmt: skip
        assert (aborted.status, aborted.out, aborted.err) == (0, "", "")
        after = tool(cluster, "transactions", "describe-producers", "--topic", topic,
                     "--partition", "0").lines()  # fmt: skip
        assert cells(after[1])[5] == "None"
    finally:
        with contextlib.suppress(Exception):
            producer.abort_transaction(5)


def test_console_perf_and_delete_records(cluster: Cluster, tmp_path: Path) -> None:
    topic = create(cluster, "cl-console", partitions=3)
    lines = "".join(f"k{i}:v{i}\n" for i in range(9))
    produced = tool(cluster, "console-producer", "--topic", topic, "--property", "parse.key=true",
                    "--property", "key.separator=:", stdin=lines)  # fmt: skip
    assert (produced.status, produced.out) == (0, ""), produced.err
    consumed = tool(cluster, "console-consumer", "--topic", topic, "--from-beginning",
                    "--max-messages", "9", "--property", "print.key=true")  # fmt: skip
    assert sorted(consumed.lines()) == sorted(f"k{i}\tv{i}" for i in range(9))
    assert consumed.err.strip() == "Processed a total of 9 messages"
    perf = tool(cluster, "producer-perf-test", "--topic", topic, "--num-records", "600",
                "--record-size", "50", "--throughput", "-1")  # fmt: skip
    summary = kafka.PRODUCER_SUMMARY.match(perf.lines()[-1])
    assert summary is not None and summary.group(1) == "600", perf.out
    read = tool(cluster, "consumer-perf-test", "--topic", topic, "--messages", "609")
    assert read.lines()[0] == kafka.CONSUMER_PERF_HEADER
    assert read.lines()[1].split(", ")[4] == "609"
    ends = {int(line.rsplit(":", 1)[1]) for line in tool(cluster, "get-offsets", "--topic",
                                                            topic).lines()}  # fmt: skip
    assert sum(ends) == 609
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "offset": 2} for p in range(3)]}))  # fmt: skip
    deleted = tool(cluster, "delete-records", "--offset-json-file", str(spec))
    # DeleteRecordsCommand, each partition's DeleteRecords sent to its own leader.
    assert deleted.lines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        *[f"partition: {topic}-{p}\tlow_watermark: 2" for p in range(3)],
    ]
    assert tool(cluster, "get-offsets", "--topic", topic, "--time", "-2").lines() == [
        f"{topic}:{p}:2" for p in range(3)
    ]


def test_acls_through_any_broker(cluster: Cluster) -> None:
    topic = unique_topic("cl-acl")
    added = tool(cluster, "acls", "--add", "--allow-principal", "User:alice", "--operation",
                 "Read", "--topic", topic)  # fmt: skip
    pattern = f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)"
    # AclCommand: the ACLs added, then the resource's current ACLs.
    assert added.out.startswith(f"Adding ACLs for resource `{pattern}`: \n")
    entry = "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    for broker in cluster.brokers:
        until(
            f"broker {broker.node_id} lists the ACL",
            partial(cli_tool, broker.address, "acls", "--list", "--topic", topic),
            lambda run: entry in run.out,
        )
    listed = cli_tool(cluster.brokers[2].address, "acls", "--list", "--topic", topic).out
    assert listed == f"Current ACLs for resource `{pattern}`: \n {entry} \n\n"
    tool(cluster, "acls", "--remove", "--force", "--topic", topic)
    wait_until(
        "the ACL is gone everywhere",
        lambda: all(
            cli_tool(b.address, "acls", "--list", "--topic", topic).out == ""
            for b in cluster.brokers
        ),
    )


def test_storage_info_of_a_broker_and_a_controller(cluster: Cluster) -> None:
    for node in (cluster.brokers[0], cluster.controllers[0]):
        run = sparklog("storage", "info", "-c", str(node.properties_path))
        assert run.status == 0, run.err
        # StorageTool.infoCommand: the directories, then each one's meta.properties.
        assert run.lines()[0] == "Found log directory:"
        found = [line for line in run.lines() if line.startswith("Found metadata: {")]
        assert found and all(f"cluster.id={cluster.cluster_id}," in line for line in found)
        assert all(f", node.id={node.node_id}, version=1}}" in line for line in found)


def test_share_groups(cluster: Cluster) -> None:
    topic, group = create(cluster, "cl-share", partitions=2), unique_topic("cl-sg")
    consumer = ck.ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                 "group.id": group})  # fmt: skip
    consumer.subscribe([topic])
    try:
        # share.auto.offset.reset is latest: produce until the member receives a record.
        deadline = time.monotonic() + 90
        while not [m for m in consumer.poll(0.5) if m.error() is None]:
            assert time.monotonic() < deadline, "the share consumer never received a record"
            produce(cluster, topic, 2, 2)
        assert group in tool(cluster, "share-groups", "--list").lines()  # every broker asked
        members = tool(cluster, "share-groups", "--describe", "--group", group, "--members")
        # ShareGroupCommand.printMembers
        assert members.lines()[1].split() == [
            "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"
        ]  # fmt: skip
        (row,) = [line.split() for line in members.lines()[2:] if line.strip()]
        assert row[0] == group and row[4] == "2"
        state = tool(cluster, "share-groups", "--describe", "--group", group, "--state").lines()
        assert state[1].split() == ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"]
        address = {b.node_id: b.address for b in cluster.brokers}
        _, coordinator, node_id, group_state, count = state[2].split()
        assert coordinator == address[int(node_id.strip("()"))]
        assert (group_state, count) == ("Stable", "1")
    finally:
        consumer.close()
    until(
        "the member left",
        lambda: tool(cluster, "share-groups", "--describe", "--group", group, "--state").out,
        lambda out: "Empty" in out,
    )
    offsets = tool(cluster, "share-groups", "--describe", "--group", group)
    assert offsets.err == f"\nShare group '{group}' has no active members.\n"
    assert offsets.lines()[1].split() == [
        "GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"
    ]  # fmt: skip
    reset = tool(cluster, "share-groups", "--reset-offsets", "--group", group, "--topic", topic,
                 "--to-earliest", "--execute")  # fmt: skip
    assert reset.lines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert sorted(line.split()[2:] for line in reset.lines()[2:] if line.strip()) == [
        ["0", "0"], ["1", "0"]
    ]  # fmt: skip
    deleted = tool(cluster, "share-groups", "--delete", "--group", group)
    assert deleted.out == f"Deletion of requested share groups ('{group}') was successful.\n"
    missing = tool(cluster, "share-groups", "--describe", "--group", group)
    assert missing.status == 1
    assert missing.out == f"\nError: Share group '{group}' does not exist.\n"
