"""`sparklog storage format` / random-uuid / the start-up check, with every error message."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from sparklog.cli.storage_tool import (
    StorageToolError,
    check_formatted,
    format_storage,
    parse_initial_controllers,
    random_uuid,
    read_meta_properties,
)
from sparklog.config import ServerConfig
from sparklog.metadata.bootstrap import (
    BOOTSTRAP_FILENAME,
    BootstrapError,
    metadata_version_level,
    read_bootstrap_checkpoint,
)
from sparklog.protocol.kafka_uuid import uuid_from_str

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def config_for(tmp_path: Path, **extra: str) -> ServerConfig:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "localhost:9093",
        "log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}",
    }
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return ServerConfig.from_props(props)


def test_random_uuid_shape() -> None:
    seen = set()
    for _ in range(300):
        text = random_uuid()
        assert len(text) == 22 and "=" not in text and not text.startswith("-")
        raw = base64.urlsafe_b64decode(text + "==")
        assert len(raw) == 16 and raw not in (bytes(16), bytes(15) + b"\x01")
        seen.add(text)
    assert len(seen) == 300


def test_format_writes_meta_properties_and_bootstrap(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    lines = format_storage(config, CLUSTER_ID, standalone=True)
    assert lines == [
        f"Formatting metadata directory {tmp_path / 'a'} with metadata.version 4.0-IV3.",
        f"Formatting data directory {tmp_path / 'b'} with metadata.version 4.0-IV3.",
    ]
    ids = set()
    for name in ("a", "b"):
        meta = read_meta_properties(tmp_path / name)
        assert meta is not None
        assert (meta.version, meta.cluster_id, meta.node_id) == (1, CLUSTER_ID, 1)
        assert meta.directory_id is not None
        uuid_from_str(meta.directory_id)
        ids.add(meta.directory_id)
        text = (tmp_path / name / "meta.properties").read_text()
        assert "version=1\n" in text and f"cluster.id={CLUSTER_ID}\n" in text
        bootstrap = read_bootstrap_checkpoint(tmp_path / name)
        assert bootstrap is not None and bootstrap.metadata_version == 25
        assert bootstrap.records[0].data == {"name": "metadata.version", "feature_level": 25}
    assert len(ids) == 2
    cluster_id, dir_ids = check_formatted(config)
    assert cluster_id == CLUSTER_ID and set(dir_ids.values()) == ids


def test_release_version(tmp_path: Path) -> None:
    format_storage(config_for(tmp_path), CLUSTER_ID, standalone=True, release_version="3.9")
    bootstrap = read_bootstrap_checkpoint(tmp_path / "a")
    assert bootstrap is not None and bootstrap.metadata_version == 21
    assert metadata_version_level("4.0-IV1") == 23
    with pytest.raises(BootstrapError):
        metadata_version_level("2.8")


def _feature_levels(tmp_path: Path) -> dict[str, int]:
    bootstrap = read_bootstrap_checkpoint(tmp_path / "a")
    assert bootstrap is not None
    return {
        r.data["name"]: r.data["feature_level"]
        for r in bootstrap.records
        if r.name == "FeatureLevelRecord" and r.data["name"] != "metadata.version"
    }


@pytest.mark.parametrize(
    ("release", "features", "levels"),
    [
        # Kafka's TransactionVersion TV_2 bootstraps from 4.0-IV2: on by default for 4.0
        (None, (), {"transaction.version": 2}),
        ("4.0-IV1", (), {}),
        ("3.9", ("transaction.version=2",), {"transaction.version": 2}),
        (None, ("transaction.version=1",), {"transaction.version": 1}),
        (None, ("transaction.version=0",), {}),
        ("4.1", (), {"transaction.version": 2, "eligible.leader.replicas.version": 1}),
    ],
)
def test_bootstrapped_transaction_version(
    tmp_path: Path, release: str | None, features: tuple[str, ...], levels: dict[str, int]
) -> None:
    format_storage(
        config_for(tmp_path),
        CLUSTER_ID,
        standalone=True,
        release_version=release,
        features=features,
    )
    assert _feature_levels(tmp_path) == levels


@pytest.mark.parametrize(
    ("feature", "message"),
    [
        ("transaction.version=3", "Unsupported level 3 of transaction.version"),
        ("no.such.version=1", "Unsupported feature: no.such.version"),
        ("transaction.version", "expected FEATURE=LEVEL"),
    ],
)
def test_feature_refusals(tmp_path: Path, feature: str, message: str) -> None:
    with pytest.raises(StorageToolError, match=message):
        format_storage(config_for(tmp_path), CLUSTER_ID, standalone=True, features=[feature])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"cluster_id": "not-a-uuid"},
            "Cluster ID string not-a-uuid does not appear to be a valid UUID",
        ),
        ({"cluster_id": "AAAAAAAAAAAAAAAAAAAAAA"}, "is a reserved UUID"),
        (
            {"release_version": "9.9"},
            "Unknown release version '9.9'. Supported versions are: 3.3-IV3 to 4.2-IV1 "
            "(default 4.0-IV3)",
        ),
        (
            {},
            "Because controller.quorum.voters is not set on this controller, you must specify "
            "one of the following: --standalone, --initial-controllers, or "
            "--no-initial-controllers.",
        ),
        ({"standalone": True, "no_initial_controllers": True}, "Only one of --standalone"),
        ({"initial_controllers": "1@h:9093"}, "Invalid --initial-controllers entry '1@h:9093'"),
    ],
)
def test_format_refusals(tmp_path: Path, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"cluster_id": CLUSTER_ID}
    args.update(kwargs)
    with pytest.raises(StorageToolError) as info:
        format_storage(config_for(tmp_path), **args)  # type: ignore[arg-type]
    assert message in str(info.value)
    assert not (tmp_path / "a" / "meta.properties").exists()


def test_standalone_needs_controller_and_no_static_voters(tmp_path: Path) -> None:
    broker = config_for(tmp_path, **{"process.roles": "broker", "listeners": "PLAINTEXT://:9092"})
    with pytest.raises(
        StorageToolError, match=re.escape("You can only use --standalone on a controller.")
    ):
        format_storage(broker, CLUSTER_ID, standalone=True)
    assert format_storage(broker, CLUSTER_ID)  # brokers need no quorum flag
    static = config_for(tmp_path, **{"controller.quorum.voters": "1@localhost:9093"})
    with pytest.raises(
        StorageToolError, match=re.escape("You cannot specify controller.quorum.voters")
    ):
        format_storage(static, CLUSTER_ID, standalone=True)


def test_already_formatted_and_ignore_formatted(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    format_storage(config, CLUSTER_ID, standalone=True)
    with pytest.raises(StorageToolError) as info:
        format_storage(config, CLUSTER_ID, standalone=True)
    assert str(info.value) == (
        f"Log directory {tmp_path / 'a'} is already formatted. Use --ignore-formatted to "
        "ignore this directory and format the others."
    )
    assert format_storage(config, CLUSTER_ID, standalone=True, ignore_formatted=True) == [
        "All of the log directories are already formatted."
    ]
    wider = config_for(
        tmp_path, **{"log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'},{tmp_path / 'c'}"}
    )
    lines = format_storage(wider, CLUSTER_ID, standalone=True, ignore_formatted=True)
    assert lines == [f"Formatting data directory {tmp_path / 'c'} with metadata.version 4.0-IV3."]
    with pytest.raises(
        StorageToolError, match=r"Invalid cluster.id in: .*\. Expected .*, but read MkU3"
    ):
        format_storage(wider, random_uuid(), standalone=True, ignore_formatted=True)


def test_initial_controllers_sets_the_metadata_directory_id(tmp_path: Path) -> None:
    dir_id = random_uuid()
    format_storage(
        config_for(tmp_path), CLUSTER_ID, initial_controllers=f"1@localhost:9093:{dir_id}"
    )
    meta = read_meta_properties(tmp_path / "a")
    assert meta is not None and meta.directory_id == dir_id
    voters = parse_initial_controllers(f"1@h:1:{dir_id},2@[::1]:2:{random_uuid()}")
    assert [(v.node_id, v.host, v.port) for v in voters] == [(1, "h", 1), (2, "::1", 2)]
    with pytest.raises(StorageToolError, match="Duplicate node id"):
        parse_initial_controllers(f"1@h:1:{dir_id},1@h:2:{dir_id}")


def test_check_formatted_messages(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    with pytest.raises(StorageToolError) as info:
        check_formatted(config, "config/server.properties")
    assert str(info.value) == (
        f"No meta.properties found in {tmp_path / 'a'}. Format it with: sparklog storage format "
        "--cluster-id $(sparklog storage random-uuid) --config config/server.properties "
        "--standalone"
    )
    format_storage(config, CLUSTER_ID, standalone=True)
    wider = config_for(
        tmp_path, **{"log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'},{tmp_path / 'c'}"}
    )
    with pytest.raises(StorageToolError) as info:
        check_formatted(wider)
    assert str(info.value) == (
        f"No meta.properties found in {tmp_path / 'c'}. Format it with: sparklog storage format "
        f"--cluster-id {CLUSTER_ID} --config server.properties --ignore-formatted"
    )
    other_node = config_for(
        tmp_path, **{"node.id": "2", "controller.quorum.bootstrap.servers": "h:1"}
    )
    with pytest.raises(StorageToolError) as info:
        check_formatted(other_node)
    assert str(info.value).startswith(
        "Stored node id 1 doesn't match previous node id 2 in "
        f"{tmp_path / 'a' / 'meta.properties'}. "
        "If you moved your data, make sure your configured node id matches."
    )


def test_check_formatted_detects_cluster_id_mismatch_and_bad_files(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    format_storage(config, CLUSTER_ID, standalone=True)
    meta_b = tmp_path / "b" / "meta.properties"
    original = meta_b.read_text()
    other = random_uuid()
    meta_b.write_text(original.replace(CLUSTER_ID, other))
    with pytest.raises(StorageToolError) as info:
        check_formatted(config)
    assert (
        str(info.value)
        == f"Invalid cluster.id in: {meta_b}. Expected {CLUSTER_ID}, but read {other}"
    )
    meta_b.write_text(original.replace("version=1", "version=0"))
    with pytest.raises(StorageToolError, match="Found unexpected version in"):
        check_formatted(config)
    meta_b.write_text(original.replace(f"cluster.id={CLUSTER_ID}\n", ""))
    with pytest.raises(
        StorageToolError, match=re.escape("cluster.id was not specified in the v1 file")
    ):
        check_formatted(config)
    a_id = read_meta_properties(tmp_path / "a").directory_id  # type: ignore[union-attr]
    meta_b.write_text(
        original.split("directory.id=")[0] + f"directory.id={a_id}\nnode.id=1\nversion=1\n"
    )
    with pytest.raises(StorageToolError, match="Duplicate directory ID"):
        check_formatted(config)


def test_corrupt_bootstrap_checkpoint(tmp_path: Path) -> None:
    format_storage(config_for(tmp_path), CLUSTER_ID, standalone=True)
    path = tmp_path / "a" / BOOTSTRAP_FILENAME
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(BootstrapError, match="Corrupt bootstrap metadata file"):
        read_bootstrap_checkpoint(tmp_path / "a")
    assert read_bootstrap_checkpoint(tmp_path / "missing") is None
