"""The broker's side of KIP-858: the replica manager reports which log dir holds each replica
(and creates a log in the dir the metadata names), and the AssignmentsManager sends those
reports to the controller in batches, retrying what failed."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from sparklog.broker.dir_assignments import DirectoryAssignments
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.controller.directories import MAX_ASSIGNMENTS_PER_REQUEST, assignments_of
from sparklog.metadata.delta import MetadataDelta
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AssignReplicasToDirsRequest,
    CreateTopicsRequestTopicsAssignments,
)
from sparklog.storage.config import LogConfig
from sparklog.storage.manager import LogManager
from tests.unit.controller.test_log_dir_assignment import DIR_A, DIR_B, Cluster
from tests.unit.controller.test_quorum_controller import create, topic


def _manager(root: Path) -> ReplicaManager:
    config = LogConfig()
    dirs = [str(root / "a"), str(root / "b")]
    logs = LogManager(dirs, config, lambda: int(time.time() * 1000))
    rm = ReplicaManager(1, logs, config)
    rm.set_directory_ids({dirs[0]: DIR_A, dirs[1]: DIR_B})
    return rm


def test_replicas_are_reported_then_placed_by_the_controller(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "meta")
    rm = _manager(tmp_path)
    reported: list[tuple[bytes, int, bytes]] = []
    rm.dir_assigner = lambda t, p, d: reported.append((t, p, d))
    image = cluster.controller.image
    rm.publish(MetadataDelta(image), image)
    # Broker 1 has two dirs: the controller left its replicas UNASSIGNED; the least-loaded
    # dir took each new log, and each is reported.
    placed = {p: rm.log_manager.dir_of("t", p) or "" for p in range(4)}
    ids = {str(tmp_path / "a"): DIR_A, str(tmp_path / "b"): DIR_B}
    topic_id = cluster.partitions()[0][0]
    assert sorted(reported) == sorted((topic_id, p, ids[d]) for p, d in placed.items())
    assert set(placed.values()) == set(ids)

    async def to_controller(key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        assert (key, version) == (73, 0)
        request = cast(AssignReplicasToDirsRequest, body)  # what the controller would decode
        response = cluster.controller.run(cluster.controller.assign_replicas_to_dirs(request))
        return {**response}

    assignments = DirectoryAssignments(
        1, to_controller, lambda: cluster.epochs[1], lambda: cluster.controller.image
    )
    for t, p, d in reported:
        assignments.submit(t, p, d)
    assert asyncio.run(assignments.send(assignments._next_batch())) == {}
    image = cluster.controller.image
    assert [p.directories[0] for _, p in cluster.partitions()] == [ids[placed[p]] for p in range(4)]
    reported.clear()
    rm.publish(MetadataDelta(image), image)
    assert reported == []  # the metadata now names the dirs the logs are in

    # A replica the metadata already placed (in B) is created there, not in the least-loaded.
    assignments_: list[CreateTopicsRequestTopicsAssignments] = [
        {"partition_index": 0, "broker_ids": [1, 2, 3]}
    ]
    create(cluster.node, topic("u", assignments=assignments_))
    u = cluster.controller.image.topics.get_topic("u")
    assert u is not None
    body: AssignReplicasToDirsRequest = {
        "broker_id": 1,
        "broker_epoch": cluster.epochs[1],
        "directories": [
            {
                "id": DIR_B,
                "topics": [{"topic_id": u.topic_id, "partitions": [{"partition_index": 0}]}],
            }
        ],
    }
    cluster.controller.run(cluster.controller.assign_replicas_to_dirs(body))
    image = cluster.controller.image
    rm.publish(MetadataDelta(image), image)
    assert rm.log_manager.dir_of("u", 0) == os.path.abspath(tmp_path / "b")
    assert reported == []


def test_assignments_are_batched_and_retried() -> None:
    sent: list[int] = []
    fail_first = [True]

    async def controller(key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        triples = assignments_of(body)
        sent.append(len(triples))
        if fail_first[0]:
            fail_first[0] = False
            return {"throttle_time_ms": 0, "error_code": int(ErrorCode.NOT_CONTROLLER)}
        by_dir: dict[bytes, dict[bytes, list[int]]] = {}
        for d, t, p in triples:
            by_dir.setdefault(d, {}).setdefault(t, []).append(p)
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "directories": [
                {
                    "id": d,
                    "topics": [
                        {
                            "topic_id": t,
                            "partitions": [{"partition_index": p, "error_code": 0} for p in ps],
                        }
                        for t, ps in topics.items()
                    ],
                }
                for d, topics in by_dir.items()
            ],
        }

    async def scenario() -> DirectoryAssignments:
        assignments = DirectoryAssignments(
            1, controller, lambda: 5, lambda: None, retry_backoff_ms=1
        )
        total = MAX_ASSIGNMENTS_PER_REQUEST * 2 + 500
        for p in range(total):
            assignments.submit(b"t" * 16, p, DIR_A if p % 2 else DIR_B)
        stopping = asyncio.Event()
        task = asyncio.create_task(assignments.run(stopping))
        deadline = time.monotonic() + 10
        while assignments.assigned < total and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        stopping.set()
        await task
        return assignments

    assignments = asyncio.run(scenario())
    assert assignments.assigned == MAX_ASSIGNMENTS_PER_REQUEST * 2 + 500
    # The first request failed as a whole and was sent again; never more than 2250 at once.
    assert sent == [2250, 2250, 2250, 500]
