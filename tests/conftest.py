"""Shared pytest configuration for every test folder.

Per-test time bounds: ``@pytest.mark.timeout(seconds)`` bounds a test's call phase, and every
``integration`` test gets ``DEFAULT_INTEGRATION_TIMEOUT_S`` unless it says otherwise. When the
pytest-timeout plugin is installed it enforces the marker itself and this fallback stands down;
otherwise SIGALRM raises ``TestTimeoutError`` in the test (Python-level waits), and a
faulthandler watchdog dumps every thread's stack and exits the run a minute later if the test is
stuck inside C code (nodes die with the run through PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import faulthandler
import signal
import threading
from collections.abc import Generator
from types import FrameType

import pytest

DEFAULT_INTEGRATION_TIMEOUT_S = 300.0
WATCHDOG_GRACE_S = 60.0


class TestTimeoutError(Exception):
    """A test ran past its time bound."""

    __test__ = False  # not a test class, despite the name


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "timeout(seconds): bound a test's run time (pytest-timeout or a fallback)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A marker (rather than a private default) lets pytest-timeout enforce the same bound.
    for item in items:
        if item.get_closest_marker("integration") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(DEFAULT_INTEGRATION_TIMEOUT_S))


def _time_bound(item: pytest.Item) -> float | None:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    seconds = _time_bound(item)
    usable = (
        seconds is not None
        and not item.config.pluginmanager.hasplugin("timeout")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable or seconds is None:
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise TestTimeoutError(f"{item.nodeid} exceeded its time bound of {seconds:.0f}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(seconds + WATCHDOG_GRACE_S, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
