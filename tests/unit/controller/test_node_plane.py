"""MetadataPlane on the real KRaft replica: a standalone-formatted controller elects itself,
bootstraps, commits a topic through the ControllerDriver, and a restart replays the same image;
an inactive controller refuses writes with NOT_CONTROLLER."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from sparklog.cli.storage_tool import check_formatted, format_storage
from sparklog.config import ServerConfig
from sparklog.metadata.image import MetadataImage
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.message_types import BrokerHeartbeatRequest
from sparklog.server.plane import FIRST_BOOTSTRAP_ID, MetadataPlane, quorum_setup
from tests.unit.controller.test_quorum_controller import create_request, topic

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def config_for(tmp_path: Path, **extra: str) -> ServerConfig:
    props = {
        "process.roles": "controller",
        "node.id": "1",
        "listeners": "CONTROLLER://127.0.0.1:19999",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "127.0.0.1:19999",
        "log.dirs": str(tmp_path / "logs"),
    }
    props.update(extra)
    return ServerConfig.from_props(props)


async def _until_active(plane: MetadataPlane, timeout_s: float = 10.0) -> None:
    assert plane.controller_driver is not None
    deadline = time.monotonic() + timeout_s
    while not plane.controller_driver.is_active:
        assert time.monotonic() < deadline, "the sole voter did not become the active controller"
        await asyncio.sleep(0.01)


async def _create_and_restart(config: ServerConfig) -> tuple[MetadataImage, MetadataImage]:
    cluster_id, dir_ids = check_formatted(config)
    plane = MetadataPlane.open(config, cluster_id, directory_ids=dir_ids)
    plane.start()
    await _until_active(plane)
    driver = plane.controller_driver
    assert driver is not None and plane.controller is not None
    controller = plane.controller
    request = create_request(topic("t", 2))
    # No broker is registered: placement fails with a Kafka error, committed nothing.
    response = await driver.call(lambda: controller.create_topics(request, 7))
    assert response["topics"][0]["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR
    await driver.call(
        lambda: controller.incremental_alter_configs(
            {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": "",
                        "configs": [
                            {"name": "log.retention.ms", "config_operation": 0, "value": "1234"}
                        ],
                    }
                ],
                "validate_only": False,
            },
            1,
        )
    )
    before = plane.controller.image
    assert before.features.metadata_version > 0
    await plane.shutdown()
    again = MetadataPlane.open(config, cluster_id, directory_ids=dir_ids)
    again.start()
    await _until_active(again)
    assert again.controller is not None
    after = again.controller.image
    assert again.leader.epoch > plane.leader.epoch
    await again.shutdown()
    return before, after


def test_standalone_controller_commits_and_replays(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    format_storage(config, CLUSTER_ID, standalone=True)
    setup = quorum_setup(config)
    assert setup.voters is not None and setup.voters.ids == {1}
    before, after = asyncio.run(_create_and_restart(config))
    assert after.configs == before.configs
    assert after.configs.get(4, "")["log.retention.ms"] == "1234"
    assert after.features == before.features


def test_observer_is_not_a_controller(tmp_path: Path) -> None:
    broker = config_for(
        tmp_path,
        **{
            "process.roles": "broker",
            "listeners": "PLAINTEXT://127.0.0.1:19998",
            "advertised.listeners": "PLAINTEXT://127.0.0.1:19998",
        },
    )
    format_storage(broker, CLUSTER_ID, no_initial_controllers=True)
    setup = quorum_setup(broker)
    assert setup.voters is None and setup.bootstrap_ids == (FIRST_BOOTSTRAP_ID,)
    assert setup.endpoints == {FIRST_BOOTSTRAP_ID: ("127.0.0.1", 19999)}

    async def run() -> None:
        plane = MetadataPlane.open(broker, CLUSTER_ID)
        assert plane.controller is None and plane.controller_driver is None
        plane.start()
        await asyncio.sleep(0.1)
        assert not plane.replica.is_voter and plane.leader.leader_id == -1
        await plane.close()

    asyncio.run(run())


def test_static_voters(tmp_path: Path) -> None:
    config = config_for(
        tmp_path, **{"controller.quorum.voters": "1@127.0.0.1:19999,2@127.0.0.1:19997"}
    )
    setup = quorum_setup(config)
    assert setup.static and setup.voters is not None and setup.voters.ids == {1, 2}
    assert setup.endpoints[2] == ("127.0.0.1", 19997)

    async def run() -> None:
        format_storage(config, CLUSTER_ID)
        plane = MetadataPlane.open(config, CLUSTER_ID)
        plane.start()
        await asyncio.sleep(0.1)
        # Two voters, one of them down: nobody leads, writes are refused.
        assert plane.controller is not None and plane.controller_driver is not None
        controller = plane.controller
        with pytest.raises(KafkaApiError) as info:
            await plane.controller_driver.call(controller.bootstrap_result)
        assert info.value.code == ErrorCode.NOT_CONTROLLER
        await plane.close()

    asyncio.run(run())


def test_a_leader_whose_epoch_is_not_activated_refuses_operations(tmp_path: Path) -> None:
    """Raft may name a node leader before (or without) the controller's activation of that epoch
    (a controller restarted with a persisted leadership it has lost names itself leader until it
    hears of the next election). Operations then fail NOT_CONTROLLER instead of deciding on an
    image that may not hold the log yet (chaos seed 42: heartbeats answered
    BROKER_ID_NOT_REGISTERED from an empty image made every broker re-register)."""
    config = config_for(tmp_path)
    format_storage(config, CLUSTER_ID, standalone=True)

    async def run() -> None:
        cluster_id, dir_ids = check_formatted(config)
        plane = MetadataPlane.open(config, cluster_id, directory_ids=dir_ids)
        plane.start()
        await _until_active(plane)
        driver, controller = plane.controller_driver, plane.controller
        assert driver is not None and controller is not None
        heartbeat: BrokerHeartbeatRequest = {
            "broker_id": 5,
            "broker_epoch": 1,
            "current_metadata_offset": 0,
            "want_fence": False,
            "want_shut_down": False,
            "offline_log_dirs": [],
        }
        activated = driver._activated_epoch
        driver._activated_epoch = activated - 1  # as if this epoch's activation failed
        assert controller.is_active and not driver.is_active
        with pytest.raises(KafkaApiError) as refused:
            await driver.call(lambda: controller.broker_heartbeat(heartbeat, 0))
        assert refused.value.code == ErrorCode.NOT_CONTROLLER
        driver._activated_epoch = activated
        answer = await driver.call(lambda: controller.broker_heartbeat(heartbeat, 0))
        assert answer["error_code"] == ErrorCode.BROKER_ID_NOT_REGISTERED
        await plane.shutdown()

    asyncio.run(run())
