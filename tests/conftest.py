"""Shared pytest configuration for every test folder.

Object store: ``moto_s3`` (session) is moto's ``ThreadedMotoServer`` on 127.0.0.1 and a free
port, started once per session (bounded by ``MOTO_START_TIMEOUT_S``), shared by the tiering unit
tests and the tiering integration tests (where a node process talks to it over loopback);
``new_bucket()`` / ``s3_url`` give every test a fresh bucket, so tests never see each other's
objects. Credentials are dummies; moto accepts any.

Per-test time bounds: ``@pytest.mark.timeout(seconds)`` bounds a test's call phase, and every
``integration`` test gets ``DEFAULT_INTEGRATION_TIMEOUT_S`` unless it says otherwise. When the
pytest-timeout plugin is installed it enforces the marker itself and this fallback stands down;
otherwise SIGALRM raises ``TestTimeoutError`` in the test (Python-level waits), and a
faulthandler watchdog dumps every thread's stack and exits the run a minute later if the test is
stuck inside C code (nodes die with the run through PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import os

# grpcio >= 1.81 restarts its event-engine poller in the child of every fork (pthread_atfork);
# subprocess.Popen (close_fds, and the harness's preexec_fn) then closes the poller's epoll fd
# before exec and the child aborts with "epoll_wait error: Bad file descriptor"
# (grpc/grpc#43055). The tests run gRPC clients in-process and then start node processes, so
# a node could die at start-up at random: turn gRPC's fork support off for this process (every
# child execs at once, and none uses the parent's gRPC state). Must precede any grpc import.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import faulthandler
import signal
import socket
import threading
import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import pytest

DEFAULT_INTEGRATION_TIMEOUT_S = 300.0
WATCHDOG_GRACE_S = 60.0
MOTO_START_TIMEOUT_S = 20.0


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


@dataclass(frozen=True, slots=True)
class MotoS3:
    endpoint_url: str

    def options(self) -> dict[str, Any]:
        """fsspec storage options for s3fs against this server."""
        return {
            "key": "testing",
            "secret": "testing",
            "endpoint_url": self.endpoint_url,
            "client_kwargs": {"region_name": "us-east-1"},
        }

    def new_bucket(self) -> str:
        import s3fs

        name = f"sparklog-{uuid.uuid4().hex[:12]}"
        options = self.options()
        del options["client_kwargs"]  # us-east-1 must not be sent as a location constraint
        s3fs.S3FileSystem(skip_instance_cache=True, **options).mkdir(name)
        return name


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    from tests.integration.node_harness import free_port

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + MOTO_START_TIMEOUT_S
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                pytest.fail(f"moto server did not start on {endpoint}")
            time.sleep(0.05)
    try:
        yield MotoS3(endpoint)
    finally:
        server.stop()


@pytest.fixture
def s3_url(moto_s3: MotoS3) -> str:
    return f"s3://{moto_s3.new_bucket()}/store"
