"""ServerConfig: Kafka property names, defaults, precedence and every user-facing error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparklog.config import ConfigError, Listener, QuorumVoter, ServerConfig

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "localhost:9093",
}


def make(**overrides: str) -> ServerConfig:
    props = dict(BASE)
    for key, value in overrides.items():
        props[key.replace("_", ".")] = value
    return ServerConfig.from_props(props)


def test_kafka_sample_file_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# Kafka's config/kraft/server.properties\n"
        "process.roles=broker,controller\n"
        "node.id=1\n"
        "controller.quorum.voters=1@localhost:9093\n"
        "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n"
        "inter.broker.listener.name=PLAINTEXT\n"
        "advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
        "controller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL\n"
        "num.network.threads=3\nnum.io.threads=8\n"
        "socket.send.buffer.bytes=102400\nsocket.receive.buffer.bytes=102400\n"
        "socket.request.max.bytes=104857600\n"
        "log.dirs=/tmp/a, /tmp/b\n"
        "num.partitions=1\nnum.recovery.threads.per.data.dir=1\n"
        "offsets.topic.replication.factor=1\n"
        "transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n"
        "share.coordinator.state.topic.replication.factor=1\n"
        "share.coordinator.state.topic.min.isr=1\n"
        "log.retention.hours=168\nlog.segment.bytes=1073741824\n"
        "log.retention.check.interval.ms : 300000\n"
        "log.cleanup.policy = compact,\\\n    delete\n"
    )
    config = ServerConfig.from_file(path)
    assert config.node_id == 1
    assert config.process_roles == {"broker", "controller"}
    assert config.listeners == (
        Listener("PLAINTEXT", "", 9092, "PLAINTEXT"),
        Listener("CONTROLLER", "", 9093, "PLAINTEXT"),
    )
    assert config.advertised_listeners[0] == Listener("PLAINTEXT", "localhost", 9092, "PLAINTEXT")
    assert config.quorum_voters == (QuorumVoter(1, "localhost", 9093),)
    assert config.log_dirs == ("/tmp/a", "/tmp/b")
    assert config.metadata_log_dir == "/tmp/a"
    assert config.get("log.retention.check.interval.ms") == 300000
    assert config.get("log.cleanup.policy") == ("compact", "delete")
    assert config.get("queued.max.requests") == 500
    assert config.get("auto.create.topics.enable") is True
    assert config.get("remote.log.storage.system.enable") is False
    assert config.get("broker.session.timeout.ms") == 9000


def test_defaults() -> None:
    config = make()
    assert config.log_dirs == ("/tmp/kraft-combined-logs",)
    assert config.listeners[0] == Listener("PLAINTEXT", "", 9092, "PLAINTEXT")
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert config.broker_listeners == (Listener("PLAINTEXT", "", 9092, "PLAINTEXT"),)
    assert config.controller_listeners == (Listener("CONTROLLER", "", 9093, "PLAINTEXT"),)
    assert config.log_retention_ms == 168 * 3600 * 1000
    assert config.log_roll_ms == 168 * 3600 * 1000
    assert config.get("socket.request.max.bytes") == 104857600
    assert config.get("num.partitions") == 1
    assert config.quorum_bootstrap_servers == (("localhost", 9093),)


def test_precedence_rules() -> None:
    assert (
        make(**{"log.retention.minutes": "2", "log.retention.hours": "5"}).log_retention_ms
        == 120000
    )
    config = make(**{"log.retention.ms": "7", "log.retention.minutes": "2"})
    assert config.log_retention_ms == 7
    assert make(**{"log.retention.ms": "-1"}).log_retention_ms == -1
    assert make(**{"log.roll.ms": "1000", "log.roll.hours": "1"}).log_roll_ms == 1000
    assert make(**{"log.dir": "/x"}).log_dirs == ("/x",)
    assert make(**{"log.dir": "/x", "log.dirs": "/y,/z"}).log_dirs == ("/y", "/z")
    assert make(**{"metadata.log.dir": "/m", "log.dirs": "/y"}).all_dirs == ("/y", "/m")
    assert make(**{"log.flush.scheduler.interval.ms": "5"}).log_flush_interval_ms == 5


def test_default_log_config_maps_broker_keys_to_topic_keys() -> None:
    config = make(
        **{
            "log.segment.bytes": "2097152",
            "log.retention.minutes": "3",
            "message.max.bytes": "5000",
            "log.cleanup.policy": "compact",
            "log.message.timestamp.type": "LogAppendTime",
            "min.insync.replicas": "2",
        }
    )
    log_config = config.default_log_config()
    assert log_config.segment_bytes == 2097152
    assert log_config.retention_ms == 180000
    assert log_config.max_message_bytes == 5000
    assert log_config.cleanup_policy == ("compact",)
    assert log_config.message_timestamp_type == "LogAppendTime"
    assert log_config.min_insync_replicas == 2
    assert log_config.overridden_keys == frozenset()
    assert {"segment.bytes", "retention.ms", "cleanup.policy"} <= config.explicit_topic_defaults()
    assert "segment.ms" not in config.explicit_topic_defaults()


def test_unknown_key_suggests_the_closest() -> None:
    with pytest.raises(
        ConfigError,
        match=r"Unknown configuration key 'log.retention.hour'\. "
        r"Did you mean 'log.retention.hours'\?",
    ):
        make(**{"log.retention.hour": "1"})
    with pytest.raises(ConfigError, match=r"^Unknown configuration key 'zzz'\.$"):
        make(zzz="1")


def test_accepted_unused_kafka_keys_and_listener_prefixes() -> None:
    config = make(
        **{"ssl.client.auth": "none", "listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN"}
    )
    assert config.props["ssl.client.auth"] == "none"


def test_rlmm_plugin_keys_are_accepted_under_its_prefix() -> None:
    # A secured Kafka file configures the TopicBasedRLMM's clients; the store-based RLMM has
    # none, so the keys load and are unused. Outside the prefix they are unknown.
    client = "remote.log.metadata.common.client"
    config = make(
        **{
            f"rlmm.config.{client}.security.protocol": "SASL_SSL",
            f"rlmm.config.{client}.sasl.mechanism": "SCRAM-SHA-512",
            "rlmm.config.remote.log.metadata.topic.replication.factor": "3",
        }
    )
    assert config.props[f"rlmm.config.{client}.security.protocol"] == "SASL_SSL"
    make(**{"remote.log.metadata.manager.impl.prefix": "mine.", f"mine.{client}.x": "1"})
    with pytest.raises(ConfigError, match=re.escape("key 'rlmm.config.x'")):
        make(**{"remote.log.metadata.manager.impl.prefix": "mine.", "rlmm.config.x": "1"})
    with pytest.raises(ConfigError, match=re.escape(f"key '{client}.x'")):
        make(**{f"{client}.x": "1"})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("num.partitions", "abc", "expected a 32-bit integer"),
        ("num.partitions", "0", "must be at least 1"),
        ("log.retention.bytes", "1.5", "expected a 64-bit integer"),
        ("auto.create.topics.enable", "yes", "expected true or false"),
        ("log.message.timestamp.type", "Now", "must be one of CreateTime, LogAppendTime"),
        ("node.id", "99999999999", "out of range"),
    ],
)
def test_bad_values_name_key_value_and_type(key: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        make(**{key: value})
    message = str(info.value)
    assert f"Invalid value {value!r} for configuration {key}" in message
    assert expected in message


def test_roles_are_required_and_checked() -> None:
    props = dict(BASE)
    del props["process.roles"]
    with pytest.raises(
        ConfigError, match=re.escape("Missing required configuration process.roles")
    ):
        ServerConfig.from_props(props)
    with pytest.raises(ConfigError, match="must be one of broker, controller"):
        make(**{"process.roles": "broker,zookeeper"})
    with pytest.raises(ConfigError, match=re.escape("Duplicate role names found in process.roles")):
        make(**{"process.roles": "broker,broker"})
    props = dict(BASE)
    del props["node.id"]
    with pytest.raises(ConfigError, match=re.escape("Missing required configuration node.id")):
        ServerConfig.from_props(props)


def test_listener_rules() -> None:
    with pytest.raises(ConfigError, match="expected LISTENER_NAME://host:port"):
        make(listeners="localhost:9092")
    with pytest.raises(ConfigError, match="port 'x' is not a number"):
        make(listeners="PLAINTEXT://h:x,CONTROLLER://:9093")
    with pytest.raises(ConfigError, match="Listener FOO in listeners has no security protocol"):
        make(listeners="FOO://:9092,CONTROLLER://:9093")
    with pytest.raises(ConfigError, match="different port"):
        make(listeners="PLAINTEXT://:9092,CONTROLLER://:9092")
    with pytest.raises(ConfigError, match="different name"):
        make(listeners="PLAINTEXT://:9092,PLAINTEXT://:9094,CONTROLLER://:9093")
    with pytest.raises(
        ConfigError, match=re.escape("controller.listener.names must contain at least one")
    ):
        make(**{"controller.listener.names": ""})
    with pytest.raises(
        ConfigError, match=re.escape("must contain a listener named in controller.listener.names")
    ):
        make(listeners="PLAINTEXT://:9092")
    with pytest.raises(ConfigError, match=re.escape("process.roles is broker only")):
        make(**{"process.roles": "broker"})
    with pytest.raises(
        ConfigError, match=re.escape("inter.broker.listener.name must be a listener name")
    ):
        make(**{"inter.broker.listener.name": "INTERNAL"})
    with pytest.raises(ConfigError, match=re.escape("nonroutable meta-address 0.0.0.0")):
        make(**{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"})
    ipv6 = make(listeners="PLAINTEXT://[::1]:9092,CONTROLLER://:9093")
    assert ipv6.listeners[0] == Listener("PLAINTEXT", "::1", 9092, "PLAINTEXT")
    broker_only = make(**{"process.roles": "broker", "listeners": "PLAINTEXT://:9092"})
    assert broker_only.controller_listeners == ()


def test_quorum_rules() -> None:
    props = dict(BASE)
    del props["controller.quorum.bootstrap.servers"]
    with pytest.raises(
        ConfigError, match=re.escape("controller.quorum.bootstrap.servers=localhost:9093")
    ):
        ServerConfig.from_props(props)
    with pytest.raises(ConfigError, match="expected id@host:port"):
        make(**{"controller.quorum.voters": "localhost:9093"})
    with pytest.raises(ConfigError, match="node id 1 must be included in the set of voters"):
        make(**{"controller.quorum.voters": "2@localhost:9093"})


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read configuration file"):
        ServerConfig.from_file(tmp_path / "nope.properties")
