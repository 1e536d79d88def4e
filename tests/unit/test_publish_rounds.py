"""Time-boxed publishing: a large image reaches the partitions in rounds that yield to the
event loop, and a partition that cannot be opened for lack of descriptors answers
KAFKA_STORAGE_ERROR until a later round opens it."""

from __future__ import annotations

import asyncio
import errno
import os
import time
from pathlib import Path

import pytest

from sparklog.broker.publish_rounds import PublishRounds
from sparklog.broker.replica_manager import ReplicaManager
from sparklog.metadata.delta import MetadataDelta
from sparklog.metadata.image import MetadataImage
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from sparklog.storage.manager import LogManager
from tests.unit.controller.test_quorum_controller import Node, create, delete_request, topic

PARTITIONS = 60


def _image(root: Path, partitions: int = PARTITIONS) -> MetadataImage:
    node = Node(root / "meta")
    assert create(node, topic("wide", partitions, 1))[0]["error_code"] == 0
    image = node.loader.image
    node.close()
    return image


def _manager(root: Path) -> ReplicaManager:
    config = LogConfig()
    logs = LogManager([str(root / "data")], config, lambda: int(time.time() * 1000))
    return ReplicaManager(1, logs, config)


def test_without_an_event_loop_one_call_applies_everything(tmp_path: Path) -> None:
    image = _image(tmp_path)
    rm = _manager(tmp_path)
    rm.publish(MetadataDelta(image), image)
    assert len(rm.partitions) == PARTITIONS
    assert rm.publish_rounds.pending == 0


def test_rounds_yield_to_the_loop_and_finish(tmp_path: Path) -> None:
    image = _image(tmp_path)
    rm = _manager(tmp_path)
    rm.publish_rounds.budget_s = 0.0  # one partition per round

    async def scenario() -> list[int]:
        seen: list[int] = []

        async def heartbeat() -> None:  # what must keep running meanwhile
            while len(rm.partitions) < PARTITIONS:
                seen.append(len(rm.partitions))
                await asyncio.sleep(0)

        beat = asyncio.ensure_future(heartbeat())
        rm.publish(MetadataDelta(image), image)
        assert len(rm.partitions) == 1  # the rest is left to later rounds
        await asyncio.wait_for(beat, 10)
        return seen

    seen = asyncio.run(scenario())
    assert len(rm.partitions) == PARTITIONS
    assert len(set(seen)) > PARTITIONS // 2  # the loop ran between the rounds
    assert rm.publish_rounds.rounds >= PARTITIONS
    assert all(p.is_leader for p in rm.partitions.values())


def test_a_deleted_topic_is_removed_in_rounds_with_one_checkpoint_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = Node(tmp_path / "meta")
    assert create(node, topic("wide", PARTITIONS, 1))[0]["error_code"] == 0
    created = node.loader.image
    node.controller.run(node.controller.delete_topics(delete_request(["wide"]), 5))
    deleted = node.loader.image
    node.close()
    rm = _manager(tmp_path)
    rm.publish(MetadataDelta(created), created)
    assert len(rm.partitions) == PARTITIONS
    checkpoints: list[int] = []
    real_checkpoint = rm.log_manager.checkpoint

    def counted_checkpoint() -> None:
        checkpoints.append(len(rm.partitions))
        real_checkpoint()

    monkeypatch.setattr(rm.log_manager, "checkpoint", counted_checkpoint)
    rm.publish_rounds.budget_s = 0.0

    async def scenario() -> None:
        rm.publish(MetadataDelta(deleted), deleted)
        assert len(rm.partitions) == PARTITIONS - 1  # one log per round at this budget
        rm.publish_rounds.budget_s = 60.0  # the next round has time for all the others
        deadline = time.monotonic() + 10
        while rm.partitions and time.monotonic() < deadline:
            await asyncio.sleep(0)

    asyncio.run(scenario())
    assert not rm.partitions
    assert not list((tmp_path / "data").glob("wide-*"))
    assert checkpoints == [PARTITIONS - 1, 0]  # once per round, not once per log


def test_a_new_image_looks_at_every_partition_again(tmp_path: Path) -> None:
    rounds = PublishRounds()
    first, second = object(), object()
    rounds.begin(first)
    assert not rounds.skip(("t", 0))
    rounds.done(("t", 0))
    assert rounds.skip(("t", 0))
    rounds.begin(first)  # a later round on the same image
    assert rounds.skip(("t", 0))
    rounds.begin(second)
    assert not rounds.skip(("t", 0))


def test_out_of_descriptors_is_a_storage_error_until_a_retry_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    image = _image(tmp_path, 4)
    rm = _manager(tmp_path)
    rm.publish_rounds.retry_s = 0.05
    real_open = Log.open
    exhausted = {"on": True}

    def flaky_open(directory: str, *args: object, **kwargs: object) -> Log:
        if exhausted["on"] and directory.endswith("wide-2"):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), directory)
        return real_open(directory, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Log, "open", staticmethod(flaky_open))

    async def scenario() -> None:
        rm.publish(MetadataDelta(image), image)
        assert sorted(rm.partitions) == [("wide", 0), ("wide", 1), ("wide", 3)]
        with pytest.raises(KafkaApiError) as raised:
            rm.partition("wide", 2)
        assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert "Too many open files" in str(raised.value.message)
        await asyncio.sleep(0.2)  # retried, still failing: still a storage error
        with pytest.raises(KafkaApiError):
            rm.partition("wide", 2)
        exhausted["on"] = False
        deadline = time.monotonic() + 5
        while ("wide", 2) not in rm.partitions and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert rm.partition("wide", 2).is_leader
        rm.publish_rounds.cancel()

    asyncio.run(scenario())
    failures = [r for r in caplog.records if "lack of file descriptors" in r.getMessage()]
    assert failures and failures[0].levelname == "ERROR"
    assert "wide-2" in failures[0].getMessage()
