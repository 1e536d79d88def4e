"""Shared helpers for the storage tests: a controllable clock and batch builders."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from sparklog.storage.config import LogConfig
from sparklog.storage.log import Log
from tests.unit.storage.storage_helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def small_config() -> LogConfig:
    return LogConfig(internal_segment_bytes=1024, index_interval_bytes=64)


@pytest.fixture
def open_log(tmp_path: object, clock: FakeClock) -> Callable[..., Log]:
    def _open(config: LogConfig | None = None, name: str = "topic-0", **kw: object) -> Log:
        directory = os.path.join(str(tmp_path), name)
        return Log.open(directory, config or LogConfig(), clock, **kw)  # type: ignore[arg-type]

    return _open
