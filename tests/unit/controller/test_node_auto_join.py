"""AutoJoin decisions on real metadata planes (the AddRaftVoter path itself runs against a real
cluster in tests/integration/test_cluster_kraft.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparklog.cli.storage_tool import check_formatted, format_storage
from sparklog.server.auto_join import AutoJoin, auto_join_enabled
from sparklog.server.plane import MetadataPlane
from tests.unit.controller.test_node_plane import CLUSTER_ID, _until_active, config_for

AUTO = {"controller.quorum.auto.join.enable": "true"}


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, Mapping[str, Any]]] = []

    async def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        self.sent.append((api_key, version, body))
        return {"error_code": 0}


def test_enabled_only_on_controllers_that_ask(tmp_path: Path) -> None:
    assert not auto_join_enabled(config_for(tmp_path))
    assert auto_join_enabled(config_for(tmp_path, **AUTO))
    broker = config_for(
        tmp_path,
        **AUTO,
        **{
            "process.roles": "broker",
            "listeners": "PLAINTEXT://127.0.0.1:19998",
            "advertised.listeners": "PLAINTEXT://127.0.0.1:19998",
        },
    )
    assert not auto_join_enabled(broker)


def test_a_voter_never_asks(tmp_path: Path) -> None:
    config = config_for(tmp_path, **AUTO)
    format_storage(config, CLUSTER_ID, standalone=True)

    async def run() -> None:
        cluster_id, dir_ids = check_formatted(config)
        plane = MetadataPlane.open(config, cluster_id, directory_ids=dir_ids)
        plane.start()
        await _until_active(plane)
        recorder = Recorder()
        auto_join = AutoJoin(config, plane, cluster_id, recorder.send)
        assert not auto_join.should_request()
        assert await auto_join.attempt() is True
        assert recorder.sent == []
        body = auto_join.request_body()
        assert body["voter_id"] == 1 and body["cluster_id"] == cluster_id
        assert body["voter_directory_id"] == plane.replica.local.directory_id
        assert body["listeners"] == [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 19999}]
        await plane.shutdown()

    asyncio.run(asyncio.wait_for(run(), 30))


def test_an_observer_without_a_leader_waits(tmp_path: Path) -> None:
    config = config_for(tmp_path, **AUTO)
    format_storage(config, CLUSTER_ID, no_initial_controllers=True)

    async def run() -> None:
        cluster_id, dir_ids = check_formatted(config)
        plane = MetadataPlane.open(config, cluster_id, directory_ids=dir_ids)
        plane.start()
        await asyncio.sleep(0.2)
        recorder = Recorder()
        auto_join = AutoJoin(config, plane, cluster_id, recorder.send)
        # Nobody to fetch from (the bootstrap server is this node, not serving): not caught up.
        assert not plane.replica.is_voter
        assert await auto_join.attempt() is False
        assert recorder.sent == [] and auto_join.attempts == 0
        await plane.close()

    asyncio.run(asyncio.wait_for(run(), 30))
