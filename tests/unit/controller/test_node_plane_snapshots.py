"""Snapshots in the running metadata plane: a standalone controller with a tiny
``metadata.log.max.record.bytes.between.snapshots`` writes snapshots, the log start moves up to
them, and a restart loads the latest snapshot and replays the log above it to the same image
digest (controller and broker loader alike). Also: OffloadedFlushLog.reset_to caps a running
flush plan the way truncate_to does."""

from __future__ import annotations

import asyncio
import time
from functools import partial
from pathlib import Path
from typing import Any

from sparklog.cli.storage_tool import check_formatted, format_storage
from sparklog.config import ServerConfig
from sparklog.metrics import MetricsRegistry
from sparklog.net.raft_flush import OffloadedFlushLog
from sparklog.protocol.message_types import IncrementalAlterConfigsRequest
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.server.metadata_log import snapshot_store
from sparklog.server.node_metrics import register_node_metrics
from sparklog.server.plane import MetadataPlane
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.log_durability import FlushPlan
from tests.unit.controller.test_node_plane import _until_active, config_for


def _alter(value: str) -> IncrementalAlterConfigsRequest:
    return {
        "resources": [
            {
                "resource_type": 4,
                "resource_name": "",
                "configs": [{"name": "log.retention.ms", "config_operation": 0, "value": value}],
            }
        ],
        "validate_only": False,
    }


async def _wait(condition: object, what: str, timeout_s: float = 10.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


async def _write_then_restart(config: ServerConfig) -> None:
    cluster_id, dir_ids = check_formatted(config)
    plane = MetadataPlane.open(config, cluster_id, directory_ids=dir_ids)
    plane.start()
    await _until_active(plane)
    driver, controller = plane.controller_driver, plane.controller
    assert driver is not None and controller is not None
    for i in range(30):
        await driver.call(partial(controller.incremental_alter_configs, _alter(str(i)), 1))
    await _wait(
        lambda: (
            plane.replica.latest_snapshot_id is not None and plane.replica.log.log_start_offset > 0
        ),
        "no snapshot was written",
    )
    assert plane.snapshot_generator.emitted >= 2
    assert plane.snapshot_errors.count == 0
    await _wait(
        lambda: (
            plane.loader.image.provenance.last_offset >= controller.image.provenance.last_offset
        ),
        "the loader did not catch up",
    )
    digest = controller.image.digest()
    assert plane.loader.image.digest() == digest
    snapshot_id = plane.replica.latest_snapshot_id
    assert snapshot_id is not None
    assert snapshot_store(config).latest() == snapshot_id
    await plane.shutdown()

    again = MetadataPlane.open(config, cluster_id, directory_ids=dir_ids)
    # The snapshot was loaded before anything else: the log below it is gone.
    assert again.replica.log.log_start_offset >= snapshot_id.end_offset
    assert again.loader.snapshots_loaded == 1
    again.start()
    await _until_active(again)
    assert again.controller is not None
    restarted = again.controller
    assert restarted.image.digest() == digest
    assert restarted.image.configs.get(4, "")["log.retention.ms"] == "29"
    await _wait(
        lambda: again.loader.image.provenance.last_offset >= restarted.image.provenance.last_offset,
        "the restarted loader did not catch up",
    )
    assert again.loader.image.digest() == digest
    metrics: dict[str, dict[str, Any]] = register_node_metrics(MetricsRegistry(), again).to_json()
    controller_bean = "kafka.controller:type=KafkaController,name="
    assert metrics[controller_bean + "ActiveControllerCount"] == {"Value": 1}
    assert metrics[controller_bean + "FencedBrokerCount"] == {"Value": 0}
    assert metrics[controller_bean + "TimedOutBrokerHeartbeatCount"] == {"Count": 0}
    raft = metrics["kafka.server:type=raft-metrics"]
    assert raft["current-state"] == "leader" and raft["current-leader"] == 1
    assert raft["number-of-voters"] == 1 and raft["number-unknown-voter-connections"] == 0
    assert raft["commit-latency-max"] >= raft["commit-latency-avg"] >= 0
    image = metrics["sparklog:type=metadata-image"]
    assert image["digest"] == image["controller-digest"] == digest
    assert image["snapshots-loaded"] == 1
    snapshots = metrics["sparklog:type=metadata-snapshots"]
    assert snapshots["latest-snapshot-end-offset"] >= snapshot_id.end_offset
    assert "kafka.server:type=broker-metadata-metrics" not in metrics  # not a broker
    await again.shutdown()


def test_snapshots_are_written_and_a_restart_loads_them(tmp_path: Path) -> None:
    config = config_for(
        tmp_path,
        **{
            "metadata.log.max.record.bytes.between.snapshots": "400",
            "metadata.log.segment.ms": "20",
        },
    )
    format_storage(config, "MkU3OEVBNTcwNTJENDM2Qg", standalone=True)
    asyncio.run(asyncio.wait_for(_write_then_restart(config), 60))


def _batch(base: int, epoch: int) -> bytes:
    return build_batch(
        [RecordInput(None, b"v", timestamp=1)], base_offset=base, partition_leader_epoch=epoch
    )


def test_reset_to_caps_a_running_flush(tmp_path: Path) -> None:
    plans: list[FlushPlan] = []
    log = OffloadedFlushLog(Log.open(str(tmp_path / "m-0"), LogConfig(), lambda: 0))
    log.bind(plans.append)
    for offset in range(5):
        log.append_as_leader(_batch(offset, 1), 1)
    log.flush()
    running = plans[-1]
    assert running.target == 5
    # A snapshot download restarts the log at 2 (its epoch differs from ours) and new
    # entries arrive at 2..3 while the old plan still runs.
    log.reset_to(2, 3)
    assert log.truncated_since(running)
    assert log.flushed_offset == 2
    log.append_as_follower(_batch(2, 3) + _batch(3, 3))
    try:
        running.run()
        succeeded = True
    except OSError:  # its segment files were deleted by the reset
        succeeded = False
    log.complete(running, succeeded)
    assert log.flushed_offset == 2, "a pre-reset plan vouched for bytes it never flushed"
    log.flush()
    plans[-1].run()
    log.complete(plans[-1], True)
    assert log.flushed_offset == 4
