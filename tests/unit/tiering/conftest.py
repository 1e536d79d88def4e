"""Shared fixtures for the tiering tests: one moto S3 server per session, on loopback.

The server is moto's ``ThreadedMotoServer`` bound to 127.0.0.1 on a free port; it starts once
per session (bounded by ``MOTO_START_TIMEOUT_S``) and every test gets a fresh bucket, so tests
never see each other's objects. Credentials are dummies; moto accepts any.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

MOTO_START_TIMEOUT_S = 20.0


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    port = _free_port()
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
