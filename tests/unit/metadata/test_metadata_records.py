"""Metadata record serde (Kafka's MetadataRecordSerde framing) and the KRaft control records."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.metadata.records import (
    DATA_RECORDS,
    RecordError,
    decode_record,
    encode_record,
    latest_version,
    make_record,
)
from sparklog.raft.control_records import (
    ControlRecordError,
    decode_control_record,
    encode_control_record,
)

uuids = st.binary(min_size=16, max_size=16)
ints = st.lists(st.integers(0, 2**31 - 1), max_size=5)


def test_framing_matches_kafka() -> None:
    data = encode_record("TopicRecord", 0, {"name": "a", "topic_id": b"\x01" * 16})
    # frame version 1, api key 2, version 0, then the flexible body: compact string "a",
    # 16 uuid bytes, empty tagged fields.
    assert data == bytes([1, 2, 0, 2]) + b"a" + b"\x01" * 16 + b"\x00"
    assert data[:3] == b"\x01\x02\x00"
    assert encode_record(12, 0, {"name": "metadata.version", "feature_level": 25})[:3] == bytes(
        [1, 12, 0]
    )


def test_api_keys_are_kafkas() -> None:
    names = {key: spec.name for key, (spec, _) in DATA_RECORDS.items()}
    assert names[0] == "RegisterBrokerRecord"
    assert names[2] == "TopicRecord"
    assert names[3] == "PartitionRecord"
    assert names[4] == "ConfigRecord"
    assert names[5] == "PartitionChangeRecord"
    assert names[7] == "FenceBrokerRecord"
    assert names[8] == "UnfenceBrokerRecord"
    assert names[9] == "RemoveTopicRecord"
    assert names[12] == "FeatureLevelRecord"
    assert names[15] == "ProducerIdsRecord"
    assert names[17] == "BrokerRegistrationChangeRecord"
    assert names[20] == "NoOpRecord"
    assert latest_version("PartitionRecord") == 2


@settings(max_examples=60, deadline=None)
@given(
    partition_id=st.integers(0, 10_000),
    topic_id=uuids,
    replicas=ints,
    isr=ints,
    leader=st.integers(-1, 100),
    epoch=st.integers(-1, 2**31 - 1),
    elr=st.none() | ints,
    version=st.sampled_from([0, 1, 2]),
)
def test_partition_record_round_trip(
    partition_id: int,
    topic_id: bytes,
    replicas: list[int],
    isr: list[int],
    leader: int,
    epoch: int,
    elr: list[int] | None,
    version: int,
) -> None:
    data: dict[str, Any] = {
        "partition_id": partition_id,
        "topic_id": topic_id,
        "replicas": replicas,
        "isr": isr,
        "leader": leader,
        "leader_epoch": epoch,
        "partition_epoch": epoch,
        "directories": [b"\x02" * 16 for _ in replicas],
        "eligible_leader_replicas": elr,
    }
    record = make_record("PartitionRecord", data, version)
    decoded = decode_record(record.encode())
    assert decoded.name == "PartitionRecord" and decoded.version == version
    for key in ("partition_id", "topic_id", "replicas", "isr", "leader", "leader_epoch"):
        assert decoded.data[key] == data[key]
    if version >= 1:
        assert decoded.data["directories"] == data["directories"]
    if version >= 2:
        assert decoded.data["eligible_leader_replicas"] == elr


@settings(max_examples=40, deadline=None)
@given(
    broker_id=st.integers(0, 1000),
    epoch=st.integers(0, 2**62),
    rack=st.none() | st.text(max_size=5),
    fenced=st.booleans(),
    port=st.integers(0, 65535),
    host=st.text(max_size=20),
)
def test_register_broker_round_trip(
    broker_id: int, epoch: int, rack: str | None, fenced: bool, port: int, host: str
) -> None:
    data = {
        "broker_id": broker_id,
        "incarnation_id": b"\x09" * 16,
        "broker_epoch": epoch,
        "end_points": [{"name": "PLAINTEXT", "host": host, "port": port, "security_protocol": 0}],
        "features": [
            {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 25}
        ],
        "rack": rack,
        "fenced": fenced,
        "in_controlled_shutdown": False,
        "log_dirs": [b"\x03" * 16],
        "is_migrating_zk_broker": False,
    }
    decoded = decode_record(encode_record("RegisterBrokerRecord", 3, data))
    assert dict(decoded.data) == data


@pytest.mark.parametrize(
    ("name", "data"),
    [
        (
            "ConfigRecord",
            {"resource_type": 2, "resource_name": "t", "name": "retention.ms", "value": None},
        ),
        ("ConfigRecord", {"resource_type": 4, "resource_name": "", "name": "x", "value": "1"}),
        ("RemoveTopicRecord", {"topic_id": b"\x05" * 16}),
        ("FenceBrokerRecord", {"id": 1, "epoch": 9}),
        ("UnfenceBrokerRecord", {"id": 1, "epoch": 9}),
        ("ProducerIdsRecord", {"broker_id": 1, "broker_epoch": 4, "next_producer_id": 1000}),
        (
            "BrokerRegistrationChangeRecord",
            {
                "broker_id": 1,
                "broker_epoch": 2,
                "fenced": -1,
                "in_controlled_shutdown": 0,
                "log_dirs": [],
            },
        ),
        ("NoOpRecord", {}),
        (
            "PartitionChangeRecord",
            {"partition_id": 0, "topic_id": b"\x01" * 16, "isr": [1, 2], "leader": 2},
        ),
    ],
)
def test_other_records_round_trip(name: str, data: dict[str, Any]) -> None:
    decoded = decode_record(make_record(name, data).encode())
    assert decoded.name == name
    for key, value in data.items():
        assert decoded.data[key] == value


def test_partition_change_defaults_mean_no_change() -> None:
    decoded = decode_record(
        make_record("PartitionChangeRecord", {"partition_id": 3, "topic_id": b"\x01" * 16}).encode()
    )
    assert decoded.data["leader"] == -2
    assert decoded.data["isr"] is None and decoded.data["replicas"] is None
    assert decoded.data["leader_recovery_state"] == -1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated"),
        (bytes([2, 2, 0]), "frame version 2"),
        (bytes([1, 99, 0]), "unknown metadata record api key 99"),
        (bytes([1, 2, 7]), "unsupported TopicRecord version 7"),
        (bytes([1, 2, 0, 5]), "cannot decode TopicRecord"),
        (bytes([1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]), "too long"),
    ],
)
def test_decode_errors(data: bytes, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        decode_record(data)


def test_encode_rejects_unknown_names_and_versions() -> None:
    with pytest.raises(ValueError, match="unknown metadata record"):
        encode_record("NopeRecord", 0, {})
    with pytest.raises(ValueError, match="has no version 5"):
        encode_record("TopicRecord", 5, {})


def test_control_records() -> None:
    key, value = encode_control_record(
        "LeaderChangeMessage", {"leader_id": 3, "voters": [{"voter_id": 3}], "granting_voters": []}
    )
    assert key == b"\x00\x00\x00\x02"
    decoded = decode_control_record(key, value)
    assert decoded is not None and decoded.name == "LeaderChangeMessage"
    assert decoded.data["leader_id"] == 3
    key, value = encode_control_record("SnapshotHeaderRecord", {"last_contained_log_timestamp": 5})
    assert key == b"\x00\x00\x00\x03"
    assert decode_control_record(key, value).data["last_contained_log_timestamp"] == 5  # type: ignore[union-attr]
    voters = {
        "voters": [
            {
                "voter_id": 1,
                "voter_directory_id": b"\x07" * 16,
                "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}],
                "kraft_version_feature": {"min_supported_version": 0, "max_supported_version": 1},
            }
        ]
    }
    key, value = encode_control_record("VotersRecord", voters)
    assert decode_control_record(key, value).data["voters"][0]["endpoints"][0]["port"] == 9093  # type: ignore[union-attr]
    # Transaction markers are not raft records.
    assert decode_control_record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00") is None
    with pytest.raises(ControlRecordError):
        decode_control_record(b"\x00", b"")
    with pytest.raises(ControlRecordError):
        decode_control_record(b"\x00\x00\x00\x02", b"\x01")
