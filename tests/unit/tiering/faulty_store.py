"""A fault-injecting :class:`~sparklog.tiering.store.ObjectStore` wrapper for tests.

Every ``fail_every``-th call (counting all operations) raises :class:`InjectedFault` (a
``StoreError``) before reaching the inner store. With ``truncate_writes`` a failing write first
stores a prefix of the data under the target path, modelling a non-atomic backend or a torn
upload, so tests can prove readers turn a damaged object into a clean error.
"""

from __future__ import annotations

import builtins
import os
import tempfile
from typing import IO

from sparklog.tiering.store import ObjectStore, StoreError


class InjectedFault(StoreError):
    """The failure a :class:`FaultyStore` injects."""


class FaultyStore:
    def __init__(
        self, inner: ObjectStore, *, fail_every: int = 0, truncate_writes: bool = False
    ) -> None:
        self.inner = inner
        self.fail_every = fail_every
        self.truncate_writes = truncate_writes
        self.calls = 0
        self.faults = 0

    @property
    def url(self) -> str:
        return self.inner.url

    def _tick(self, op: str, path: str) -> bool:
        self.calls += 1
        if self.fail_every and self.calls % self.fail_every == 0:
            self.faults += 1
            return True
        return False

    def _fault(self, op: str, path: str) -> InjectedFault:
        return InjectedFault(f"{op} {self.url}/{path} failed: injected fault #{self.faults}")

    def read_bytes(self, path: str) -> bytes:
        if self._tick("read", path):
            raise self._fault("read", path)
        return self.inner.read_bytes(path)

    def open_input(self, path: str) -> IO[bytes]:
        if self._tick("open", path):
            raise self._fault("open", path)
        return self.inner.open_input(path)

    def write_atomic(self, path: str, data: bytes) -> None:
        if self._tick("write", path):
            if self.truncate_writes:
                self.inner.write_atomic(path, data[: len(data) // 2])
            raise self._fault("write", path)
        self.inner.write_atomic(path, data)

    def put_file(self, path: str, local_path: str) -> None:
        if self._tick("upload", path):
            if self.truncate_writes:
                with open(local_path, "rb") as f:
                    data = f.read()
                fd, tmp = tempfile.mkstemp()
                try:
                    os.write(fd, data[: len(data) // 2])
                    os.close(fd)
                    self.inner.put_file(path, tmp)
                finally:
                    os.unlink(tmp)
            raise self._fault("upload", path)
        self.inner.put_file(path, local_path)

    def exists(self, path: str) -> bool:
        if self._tick("stat", path):
            raise self._fault("stat", path)
        return self.inner.exists(path)

    def size(self, path: str) -> int:
        if self._tick("stat", path):
            raise self._fault("stat", path)
        return self.inner.size(path)

    def list(self, prefix: str = "") -> builtins.list[str]:
        if self._tick("list", prefix):
            raise self._fault("list", prefix)
        return self.inner.list(prefix)

    def list_dir(self, prefix: str = "") -> builtins.list[str]:
        if self._tick("list", prefix):
            raise self._fault("list", prefix)
        return self.inner.list_dir(prefix)

    def delete(self, path: str) -> None:
        if self._tick("delete", path):
            raise self._fault("delete", path)
        self.inner.delete(path)
