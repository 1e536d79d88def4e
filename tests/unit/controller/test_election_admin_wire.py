"""ElectLeaders / AlterPartitionReassignments / ListPartitionReassignments on the wire, checked
against an independent implementation (kafka-python's message classes, generated from Kafka's
JSON), and the CLIs' file parsing and usage errors."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol import admin as kp

from sparklog.cli.leader_election_tool import LeaderElectionError, _targets
from sparklog.cli.main import build_parser, main
from sparklog.cli.reassign_partitions_tool import ReassignError, parse_reassignment
from sparklog.controller.apis import CONTROLLER_APIS, error_body
from sparklog.protocol import codec
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.messages import API_BY_KEY, apis_for_listener


def test_apis_are_served_on_both_listeners() -> None:
    from sparklog.broker.apis import SERVED

    for key in (43, 45, 46):
        assert key in SERVED and key in CONTROLLER_APIS
        assert key in apis_for_listener("controller")
    assert (API_BY_KEY[45].min_version, API_BY_KEY[45].max_version) == (0, 1)
    assert (API_BY_KEY[46].min_version, API_BY_KEY[46].max_version) == (0, 0)


@pytest.mark.parametrize("version", [0, 1])
def test_alter_reassignments_request_from_kafka_python(version: int) -> None:
    cls = kp.AlterPartitionReassignmentsRequest
    fields: dict[str, Any] = {"timeout_ms": 1234}
    if version >= 1:
        fields["allow_replication_factor_change"] = False
    partition = cls.ReassignableTopic.ReassignablePartition
    message = cls(
        version=version,
        topics=[
            cls.ReassignableTopic(
                name="t",
                partitions=[
                    partition(partition_index=0, replicas=[1, 2]),
                    partition(partition_index=1, replicas=None),
                ],
            )
        ],
        **fields,
    )
    decoded = codec.decode(API_BY_KEY[45].request, version, bytes(message.encode(version=version)))
    assert decoded["timeout_ms"] == 1234
    assert decoded["allow_replication_factor_change"] is (version == 0)
    [topic] = decoded["topics"]
    assert topic["name"] == "t"
    assert [(p["partition_index"], p["replicas"]) for p in topic["partitions"]] == [
        (0, [1, 2]),
        (1, None),
    ]


@pytest.mark.parametrize("version", [0, 1])
def test_alter_reassignments_response_read_by_kafka_python(version: int) -> None:
    body = {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": False,
        "error_code": 0,
        "error_message": None,
        "responses": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 3, "error_code": 85, "error_message": "nope"},
                ],
            }
        ],
    }
    raw = codec.encode_bytes(API_BY_KEY[45].response, version, body)
    decoded = kp.AlterPartitionReassignmentsResponse.decode(raw, version=version)
    [topic] = decoded.responses
    [partition] = topic.partitions
    assert (topic.name, partition.partition_index, partition.error_code) == ("t", 3, 85)
    assert partition.error_message == "nope"
    if version >= 1:
        assert decoded.allow_replication_factor_change is False


def test_list_reassignments_round_trip_with_kafka_python() -> None:
    cls = kp.ListPartitionReassignmentsRequest
    for topics in (
        None,
        [cls.ListPartitionReassignmentsTopics(name="t", partition_indexes=[0, 2])],
    ):
        raw = bytes(cls(version=0, timeout_ms=5, topics=topics).encode(version=0))
        decoded = codec.decode(API_BY_KEY[46].request, 0, raw)
        expected = None if topics is None else [{"name": "t", "partition_indexes": [0, 2]}]
        assert decoded["topics"] == expected
    body = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "replicas": [2, 3, 4, 1],
                        "adding_replicas": [4],
                        "removing_replicas": [1],
                    }
                ],
            }
        ],
    }
    raw = codec.encode_bytes(API_BY_KEY[46].response, 0, body)
    decoded = kp.ListPartitionReassignmentsResponse.decode(raw, version=0)
    [partition] = decoded.topics[0].partitions
    assert list(partition.replicas) == [2, 3, 4, 1]
    assert list(partition.adding_replicas) == [4] and list(partition.removing_replicas) == [1]


def test_error_bodies_encode() -> None:
    for key, body in (
        (43, {"topic_partitions": [{"topic": "t", "partitions": [0, 1]}]}),
        (45, {"topics": []}),
        (46, {"topics": None}),
    ):
        response = error_body(key, body, ErrorCode.NOT_CONTROLLER, "no")
        api = API_BY_KEY[key]
        codec.encode_bytes(api.response, api.max_version, response)
        assert response["error_code"] == ErrorCode.NOT_CONTROLLER


# -- CLI parsing ----------------------------------------------------------------------------


def test_reassignment_json_parsing() -> None:
    text = (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],'
        '"log_dirs":["any","any"]},{"topic":"u","partition":3,"replicas":[3]}]}'
    )
    assert parse_reassignment(text, "f") == {("t", 0): [1, 2], ("u", 3): [3]}
    bad = {
        "{": "is not valid JSON",
        "[]": "expected",
        '{"partitions": []}': "Partition reassignment list cannot be empty",
        '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}': (
            "may not contain duplicate entries"
        ),
        '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1]},'
        ' {"topic": "t", "partition": 0, "replicas": [2]}]}': "duplicate topic partitions: t-0",
        '{"partitions": [{"topic": "t", "replicas": [1]}]}': "needs a topic and a partition",
        '{"partitions": [{"topic": "t", "partition": 0, "replicas": "1"}]}': "list of broker",
        '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1],'
        ' "log_dirs": ["/d"]}]}': "log_dirs",
    }
    for text, message in bad.items():
        with pytest.raises(ReassignError, match=message):
            parse_reassignment(text, "f")


def _election_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["leader-election", "--bootstrap-server", "h:1", *argv])


def test_leader_election_targets(tmp_path: Path) -> None:
    assert _targets(_election_args("--all-topic-partitions")) is None
    assert _targets(_election_args("--topic", "t", "--partition", "2")) == [
        {"topic": "t", "partitions": [2]}
    ]
    plan = tmp_path / "p.json"
    plan.write_text(
        '{"partitions": [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 0}]}'
    )
    assert _targets(_election_args("--path-to-json-file", str(plan))) == [
        {"topic": "t", "partitions": [1, 0]}
    ]
    errors = {
        (): "One and only one",
        ("--all-topic-partitions", "--topic", "t"): "One and only one",
        ("--topic", "t"): "--partition",
        ("--partition", "1", "--all-topic-partitions"): "--partition requires --topic",
        ("--path-to-json-file", str(tmp_path / "missing.json")): "Cannot read",
    }
    for argv, message in errors.items():
        with pytest.raises(LeaderElectionError, match=message):
            _targets(_election_args(*argv))


def test_cli_usage_errors_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leader-election", "--bootstrap-server", "h:1", "--all-topic-partitions"]) == 1
    assert "Missing required option(s): --election-type" in capsys.readouterr().err
    argv = ["leader-election", "--bootstrap-server", "h:1", "--election-type", "dirty"]
    assert main([*argv, "--all-topic-partitions"]) == 1
    assert "expected PREFERRED or UNCLEAN" in capsys.readouterr().err
    assert main(["reassign-partitions", "--bootstrap-server", "h:1"]) == 1
    assert "exactly one action" in capsys.readouterr().err
    assert main(["reassign-partitions", "--bootstrap-server", "h:1", "--execute"]) == 1
    assert "--reassignment-json-file" in capsys.readouterr().err
    assert main(["reassign-partitions", "--bootstrap-server", "h:1", "--list", "--additional"]) == 1
    assert "--additional is only valid with --execute" in capsys.readouterr().err
