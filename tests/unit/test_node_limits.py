"""The node's file descriptor budget: soft limit raised to the hard one, pool bound set."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

from sparklog.config import ConfigError, ServerConfig
from sparklog.server.limits import raise_open_files_limit, settle_open_files
from sparklog.storage.handles import default_pool
from tests.unit.test_config import BASE


@pytest.fixture
def restore_limits() -> Iterator[tuple[int, int]]:
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    capacity = default_pool().capacity
    try:
        yield limits
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)
        default_pool().set_capacity(capacity)


def test_the_soft_limit_is_raised_to_the_hard_one(restore_limits: tuple[int, int]) -> None:
    soft, hard = restore_limits
    lowered = min(soft, 512)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    before, after = raise_open_files_limit()
    assert before == lowered
    assert after == hard == resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_the_pool_is_bounded_by_the_key_or_half_the_limit(
    restore_limits: tuple[int, int],
) -> None:
    line = settle_open_files(ServerConfig.from_props({**BASE, "sparklog.log.open.files.max": "77"}))
    assert default_pool().capacity == 77
    assert "at most 77 at a time" in line
    settle_open_files(ServerConfig.from_props(dict(BASE)))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert default_pool().capacity == max(32, min(soft // 2, soft - 256))


def test_a_negative_bound_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"sparklog\.log\.open\.files\.max"):
        ServerConfig.from_props({**BASE, "sparklog.log.open.files.max": "-1"})
