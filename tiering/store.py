"""The object-store seam: a minimal storage interface chosen by URL scheme, on fsspec.

``open_store(url, options)`` returns an :class:`ObjectStore` rooted at ``url``. ``file://``
and ``memory://`` need only fsspec; ``s3://`` needs s3fs (imported lazily; the error says what
to install); any other fsspec protocol works if its package is installed. ``options`` are
fsspec storage options (for S3: ``key``, ``secret``, ``endpoint_url``, ``client_kwargs``...).

Contract, checked by tests/unit/tiering/test_store_conformance.py for every backend:

- Paths are relative to the root, ``/``-separated, without ``..`` or a leading ``/``.
- ``write_atomic`` and ``put_file`` replace an object in one step: a concurrent reader sees the
  old object or the new one, never a prefix (``file://``: temp file, fsync, rename; object
  stores: a single PUT, or a multipart upload, which is invisible until completed).
- ``read_bytes``/``open_input`` of a missing object raise :class:`ObjectNotFoundError`;
  ``delete`` of a missing object is a no-op (retries are idempotent).
- ``list(prefix)`` returns every object below ``prefix``, recursively, as root-relative paths,
  sorted; ``list_dir(prefix)`` returns the names of the immediate children (objects and
  "directories"), sorted. Both return ``[]`` for a missing prefix. Listings are never served
  from a cache, so objects written by another process are seen.
- Every backend failure surfaces as :class:`StoreError` (a subclass per kind) carrying the URL
  and the operation; no backend-specific exception escapes.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import posixpath
import shutil
import uuid
from typing import IO, Any, Protocol, cast, runtime_checkable

import pyarrow as pa

__all__ = [
    "FsspecStore",
    "ObjectNotFoundError",
    "ObjectStore",
    "StoreError",
    "StoreUnavailableError",
    "open_store",
]

_INSTALL_HINTS = {
    "s3": "s3fs (pip install 'sparklog[s3]')",
    "s3a": "s3fs (pip install 'sparklog[s3]')",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "abfs": "adlfs",
    "az": "adlfs",
}


class StoreError(Exception):
    """An object-store operation failed; the message names the URL, the operation and why."""


class ObjectNotFoundError(StoreError):
    """The object does not exist."""


class StoreUnavailableError(StoreError):
    """The store cannot be opened (unknown scheme, backend not installed, bad options)."""


@runtime_checkable
class ObjectStore(Protocol):
    """What tiering needs from a store. See the module docstring for the contract."""

    @property
    def url(self) -> str: ...

    def read_bytes(self, path: str) -> bytes: ...

    def open_input(self, path: str) -> IO[bytes]: ...

    def write_atomic(self, path: str, data: bytes) -> None: ...

    def put_file(self, path: str, local_path: str) -> None: ...

    def exists(self, path: str) -> bool: ...

    def size(self, path: str) -> int: ...

    def list(self, prefix: str = "") -> builtins.list[str]: ...

    def list_dir(self, prefix: str = "") -> builtins.list[str]: ...

    def delete(self, path: str) -> None: ...


def check_path(path: str, *, allow_root: bool = False) -> str:
    """Normalise a root-relative path; reject escapes from the root."""
    if path.startswith("/") or "\\" in path:
        raise ValueError(f"store path {path!r} must be relative and use '/'")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"store path {path!r} must not contain '..'")
    if not parts and not allow_root:
        raise ValueError("store path is empty")
    return "/".join(parts)


class FsspecStore:
    """An :class:`ObjectStore` over one fsspec filesystem and a root path inside it."""

    def __init__(self, url: str, fs: Any, root: str) -> None:
        self._url = url.rstrip("/")
        self._fs = fs
        self._root = root.rstrip("/")
        self._local = "file" in _protocols(fs)

    @property
    def url(self) -> str:
        return self._url

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (for pyarrow datasets and other fsspec-aware readers)."""
        return self._fs

    def full_path(self, path: str) -> str:
        """The backend path of a root-relative path (what ``fs`` methods take)."""
        relative = check_path(path, allow_root=True)
        if not relative:
            return self._root
        return f"{self._root}/{relative}" if self._root else relative

    def _fail(self, op: str, path: str, exc: BaseException) -> StoreError:
        where = f"{self._url}/{path}" if path else self._url
        if isinstance(exc, FileNotFoundError):
            return ObjectNotFoundError(f"{op} {where}: no such object")
        detail = str(exc) or type(exc).__name__
        return StoreError(f"{op} {where} failed: {type(exc).__name__}: {detail}")

    def read_bytes(self, path: str) -> bytes:
        full = self.full_path(check_path(path))
        try:
            data = self._fs.cat_file(full)
        except Exception as exc:
            raise self._fail("read", path, exc) from exc
        return bytes(data)

    def open_input(self, path: str) -> IO[bytes]:
        full = self.full_path(check_path(path))
        try:
            if self._local:
                # Arrow's own mapped file: a Parquet reader's column reads stay in C++ (no
                # Python read call and copy per column chunk, as through fsspec's file).
                return cast("IO[bytes]", pa.memory_map(full))
            if not self._fs.isfile(full):
                raise FileNotFoundError(full)
            handle: IO[bytes] = self._fs.open(full, "rb")
        except Exception as exc:
            raise self._fail("open", path, exc) from exc
        return handle

    def write_atomic(self, path: str, data: bytes) -> None:
        full = self.full_path(check_path(path))
        try:
            if self._local:
                _local_atomic_write(full, lambda f: f.write(data))
            else:
                self._fs.pipe_file(full, bytes(data))
        except Exception as exc:
            raise self._fail("write", path, exc) from exc

    def put_file(self, path: str, local_path: str) -> None:
        full = self.full_path(check_path(path))
        try:
            if self._local:
                with open(local_path, "rb") as source:
                    _local_atomic_write(full, lambda f: shutil.copyfileobj(source, f, 1 << 20))
            else:
                self._fs.put_file(local_path, full)
        except Exception as exc:
            raise self._fail("upload", path, exc) from exc

    def exists(self, path: str) -> bool:
        full = self.full_path(check_path(path))
        try:
            self._invalidate(full)
            return bool(self._fs.isfile(full))
        except Exception as exc:
            raise self._fail("stat", path, exc) from exc

    def size(self, path: str) -> int:
        full = self.full_path(check_path(path))
        try:
            self._invalidate(full)
            return int(self._fs.size(full))
        except Exception as exc:
            raise self._fail("stat", path, exc) from exc

    def list(self, prefix: str = "") -> builtins.list[str]:
        relative = check_path(prefix, allow_root=True)
        full = self.full_path(relative)
        try:
            self._invalidate(full)
            if not self._fs.isdir(full):
                return []
            found = self._fs.find(full)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self._fail("list", prefix, exc) from exc
        return sorted(self._relative(p) for p in found)

    def list_dir(self, prefix: str = "") -> builtins.list[str]:
        relative = check_path(prefix, allow_root=True)
        full = self.full_path(relative)
        try:
            self._invalidate(full)
            if not self._fs.isdir(full):
                return []
            entries = self._fs.ls(full, detail=False)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise self._fail("list", prefix, exc) from exc
        names = {posixpath.basename(str(e).rstrip("/")) for e in entries}
        names.discard("")
        return sorted(names)

    def delete(self, path: str) -> None:
        full = self.full_path(check_path(path))
        try:
            self._fs.rm_file(full)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._fail("delete", path, exc) from exc
        finally:
            self._invalidate(full)

    def _relative(self, backend_path: str) -> str:
        stripped = str(self._fs._strip_protocol(backend_path)).rstrip("/")
        root = str(self._fs._strip_protocol(self._root)).rstrip("/") if self._root else ""
        if root and stripped.startswith(root + "/"):
            return stripped[len(root) + 1 :]
        return stripped.lstrip("/")

    def _invalidate(self, full: str) -> None:
        # Another process may have written since our last listing (s3fs caches listings).
        if not self._local:
            self._fs.invalidate_cache(full)

    def __repr__(self) -> str:
        return f"FsspecStore({self._url!r})"


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _local_atomic_write(full: str, fill: Any) -> None:
    directory = os.path.dirname(full)
    os.makedirs(directory, exist_ok=True)
    tmp = f"{full}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, full)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_store(url: str, options: dict[str, Any] | None = None) -> FsspecStore:
    """The store rooted at ``url`` (an fsspec URL; a bare path means ``file://``)."""
    try:
        import fsspec
        import fsspec.core
    except ImportError as exc:
        raise StoreUnavailableError(
            "tiered storage needs fsspec and pyarrow (core dependencies): reinstall sparklog"
        ) from exc
    if not url:
        raise StoreUnavailableError("the remote store URL is empty")
    scheme = url.split("://", 1)[0] if "://" in url else "file"
    kwargs = dict(options or {})
    if scheme != "file":
        kwargs.setdefault("use_listings_cache", False)
        kwargs.setdefault("skip_instance_cache", True)
    try:
        fs, root = fsspec.core.url_to_fs(url, **kwargs)
    except ImportError as exc:
        hint = _INSTALL_HINTS.get(scheme, f"the fsspec backend for {scheme}://")
        raise StoreUnavailableError(f"store {url} needs {hint}: {exc}") from exc
    except ValueError as exc:
        raise StoreUnavailableError(f"store {url}: {exc}") from exc
    except Exception as exc:
        raise StoreUnavailableError(
            f"cannot open store {url}: {type(exc).__name__}: {exc}"
        ) from exc
    return FsspecStore(url, fs, str(root))
