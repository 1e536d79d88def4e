"""The read service's plain logic: control batches out, range cut, addresses, error statuses."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sparklog.config import ServerConfig
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.record_codec import CONTROL_COMMIT, build_batch, build_control_batch
from sparklog.protocol.records import iter_batches
from sparklog.readservice.chunks import (
    aborted_ranges,
    bind_address,
    data_batches,
    published_address,
    status_for,
)


def _data(offset: int, n: int) -> bytes:
    return build_batch([(None, b"v%d" % i) for i in range(n)], base_offset=offset)


def _marker(offset: int) -> bytes:
    return build_control_batch(CONTROL_COMMIT, base_offset=offset, producer_id=7, producer_epoch=0)


def _bases(buf: bytes) -> list[int]:
    return [h.base_offset for _, h in iter_batches(buf)]


def test_without_control_batches_the_input_is_returned_as_is() -> None:
    buf = _data(0, 3) + _data(3, 2)
    out, next_offset = data_batches(buf, 100)
    assert out is buf and next_offset == 5


def test_control_batches_are_dropped_and_counted_in_next_offset() -> None:
    buf = _marker(0) + _data(1, 2) + _marker(3) + _marker(4) + _data(5, 1) + _marker(6)
    out, next_offset = data_batches(buf, 100)
    assert _bases(out) == [1, 5] and next_offset == 7


def test_stops_after_the_batch_holding_end_minus_one_and_at_a_partial_tail() -> None:
    buf = _data(0, 3) + _data(3, 3) + _data(6, 3)
    out, next_offset = data_batches(buf, 4)
    assert _bases(out) == [0, 3] and next_offset == 6
    out, next_offset = data_batches(buf[:-4], 100)
    assert _bases(out) == [0, 3] and next_offset == 6
    assert data_batches(b"", 10) == (b"", -1)


@dataclass
class _Txn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def test_aborted_ranges_accepts_storage_values_and_tuples() -> None:
    assert aborted_ranges([_Txn(1, 2, 3, 4), (5, 6), (7, 8, 9)]) == [
        (1, 2, 3),
        (5, 6, -1),
        (7, 8, 9),
    ]
    assert aborted_ranges(None) == []


def test_status_names() -> None:
    assert status_for(ErrorCode.NOT_LEADER_OR_FOLLOWER) == "FAILED_PRECONDITION"
    assert status_for(ErrorCode.OFFSET_OUT_OF_RANGE) == "OUT_OF_RANGE"
    assert status_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) == "NOT_FOUND"
    assert status_for(ErrorCode.REQUEST_TIMED_OUT) == "UNAVAILABLE"


def _config(**extra: str) -> ServerConfig:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "listeners": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093",
        "advertised.listeners": "PLAINTEXT://kafka-1.example:9092",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
        "log.dirs": "/tmp/x",
    }
    props.update(extra)
    return ServerConfig.from_props(props)


def test_listener_default_disabled_and_explicit() -> None:
    assert bind_address(_config()) == ("0.0.0.0", 0)
    assert bind_address(_config(**{"sparklog.read.listener": "disabled"})) is None
    assert bind_address(_config(**{"sparklog.read.listener": "127.0.0.1:7070"})) == (
        "127.0.0.1",
        7070,
    )
    with pytest.raises(ValueError, match=r"sparklog\.read\.listener"):
        bind_address(_config(**{"sparklog.read.listener": "nohost"}))


def test_wildcard_binds_are_published_with_the_advertised_host() -> None:
    assert published_address(_config(), "0.0.0.0", 4321) == "kafka-1.example:4321"
    assert published_address(_config(), "10.0.0.5", 4321) == "10.0.0.5:4321"
