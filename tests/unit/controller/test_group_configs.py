"""Group configs (resource type GROUP): Kafka 4.x's GroupConfig keys through
IncrementalAlterConfigs on the controller, and their DescribeConfigs entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparklog.broker.config_describe import GROUP_CONFIG, describe_group_configs
from sparklog.config import ServerConfig
from sparklog.controller.group_configs import validate_group_configs
from sparklog.metadata.image import RESOURCE_GROUP
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.message_types import IncrementalAlterConfigsRequestResources
from tests.unit.controller.test_quorum_controller import Node, alter, op

SET, DELETE = 0, 1


def test_a_group_override_is_stored_and_deleted(tmp_path: Path) -> None:
    node = Node(tmp_path)
    try:
        resource: IncrementalAlterConfigsRequestResources = {
            "resource_type": RESOURCE_GROUP,
            "resource_name": "my-group",
            "configs": [op("consumer.session.timeout.ms", SET, "50000")],
        }
        [result] = alter(node, [resource])
        assert result["error_code"] == 0, result
        configs = node.loader.image.configs.get(RESOURCE_GROUP, "my-group")
        assert configs == {"consumer.session.timeout.ms": "50000"}
        resource["configs"] = [op("consumer.session.timeout.ms", DELETE)]
        [result] = alter(node, [resource])
        assert result["error_code"] == 0
        assert not node.loader.image.configs.get(RESOURCE_GROUP, "my-group")
    finally:
        node.close()


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"no.such": "1"}, "Unknown group config name: no.such"),
        ({"consumer.session.timeout.ms": "1000"}, "group.consumer.min.session.timeout.ms"),
        ({"consumer.heartbeat.interval.ms": "99999"}, "group.consumer.max.heartbeat.interval.ms"),
        ({"share.isolation.level": "dirty"}, "share.isolation.level"),
        ({"share.auto.offset.reset": "never"}, "share.auto.offset.reset"),
        ({"streams.num.standby.replicas": "x"}, "Not a number"),
    ],
)
def test_bad_group_configs_are_invalid_config(configs: dict[str, str], message: str) -> None:
    with pytest.raises(KafkaApiError) as exc:
        validate_group_configs(configs)
    assert exc.value.code == ErrorCode.INVALID_CONFIG
    assert message in str(exc.value.message)


def test_describe_shows_the_override_or_the_broker_default() -> None:
    config = ServerConfig.from_props(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": "1@localhost:9093",
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "controller.listener.names": "CONTROLLER",
            "log.dirs": "/tmp/unused",
            "group.consumer.heartbeat.interval.ms": "6000",
        }
    )
    entries = {
        e.name: e for e in describe_group_configs(config, {"consumer.session.timeout.ms": "50000"})
    }
    session = entries["consumer.session.timeout.ms"]
    assert (session.value, session.source) == ("50000", GROUP_CONFIG)
    assert [s.name for s in session.synonyms] == [
        "consumer.session.timeout.ms",
        "group.consumer.session.timeout.ms",
    ]
    heartbeat = entries["consumer.heartbeat.interval.ms"]
    assert heartbeat.value == "6000"
    assert entries["share.isolation.level"].value == "read_uncommitted"
