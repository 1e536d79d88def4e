"""The ObjectStore contract, run unchanged against every backend: file://, memory://, S3
through a moto server, and the fault-injecting wrapper (with faults off here; with faults on
below, every operation either does its job or raises a clean StoreError)."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparklog.tiering.store import (
    ObjectNotFoundError,
    ObjectStore,
    StoreError,
    StoreUnavailableError,
    open_store,
)
from tests.conftest import MotoS3
from tests.unit.tiering.faulty_store import FaultyStore, InjectedFault

BACKENDS = ["file", "memory", "s3", "faulty"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    kind = request.param
    if kind == "file":
        yield open_store(f"file://{tmp_path}/root")
    elif kind == "memory":
        yield open_store(f"memory://conformance-{uuid.uuid4().hex}/root")
    elif kind == "s3":
        moto: MotoS3 = request.getfixturevalue("moto_s3")
        yield open_store(f"s3://{moto.new_bucket()}/root", moto.options())
    else:
        yield FaultyStore(open_store(f"file://{tmp_path}/faulty"))


def test_write_read_roundtrip(store: ObjectStore) -> None:
    store.write_atomic("a/b/c.bin", b"hello")
    assert store.read_bytes("a/b/c.bin") == b"hello"
    assert store.exists("a/b/c.bin")
    assert store.size("a/b/c.bin") == 5
    with store.open_input("a/b/c.bin") as f:
        assert f.read() == b"hello"


def test_empty_object(store: ObjectStore) -> None:
    store.write_atomic("empty.snapshot", b"")
    assert store.read_bytes("empty.snapshot") == b""
    assert store.size("empty.snapshot") == 0


def test_overwrite_replaces(store: ObjectStore) -> None:
    store.write_atomic("x.json", b"old old old")
    store.write_atomic("x.json", b"new")
    assert store.read_bytes("x.json") == b"new"


def test_put_file(store: ObjectStore, tmp_path: Path) -> None:
    local = tmp_path / "local.bin"
    payload = bytes(range(256)) * 1000
    local.write_bytes(payload)
    store.put_file("up/obj.bin", str(local))
    assert store.read_bytes("up/obj.bin") == payload
    store.put_file("up/obj.bin", str(local))
    assert store.list("up") == ["up/obj.bin"]


def test_missing_object(store: ObjectStore) -> None:
    with pytest.raises(ObjectNotFoundError):
        store.read_bytes("nope/missing.bin")
    with pytest.raises(ObjectNotFoundError):
        store.open_input("nope/missing.bin")
    assert not store.exists("nope/missing.bin")
    store.delete("nope/missing.bin")


def test_list_and_list_dir(store: ObjectStore) -> None:
    for path in ["t/a/0/m.json", "t/a/0/s/1.parquet", "t/a/1/m.json", "t/b/0/m.json", "top"]:
        store.write_atomic(path, path.encode())
    assert store.list("t/a") == ["t/a/0/m.json", "t/a/0/s/1.parquet", "t/a/1/m.json"]
    assert store.list("t/a/") == store.list("t/a")
    assert store.list_dir("t") == ["a", "b"]
    assert store.list_dir("t/a/0") == ["m.json", "s"]
    assert "top" in store.list()
    assert store.list_dir("") == ["t", "top"]
    assert store.list("missing") == []
    assert store.list_dir("missing") == []


def test_delete(store: ObjectStore) -> None:
    store.write_atomic("d/1", b"1")
    store.write_atomic("d/2", b"2")
    store.delete("d/1")
    store.delete("d/1")
    assert store.list("d") == ["d/2"]
    assert not store.exists("d/1")


def test_rejects_escaping_paths(store: ObjectStore) -> None:
    for bad in ["../x", "/abs", "a/../../b", ""]:
        with pytest.raises(ValueError):
            store.write_atomic(bad, b"x")


def test_readers_never_see_a_partial_object(store: ObjectStore) -> None:
    versions = [bytes([i]) * (200_000 + i) for i in range(6)]
    store.write_atomic("m.json", versions[0])
    stop = threading.Event()
    seen: list[bytes] = []
    errors: list[BaseException] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                seen.append(store.read_bytes("m.json"))
            except BaseException as exc:
                errors.append(exc)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for version in versions[1:]:
            store.write_atomic("m.json", version)
    finally:
        stop.set()
        thread.join(10)
    assert not errors
    assert all(data in versions for data in seen)


def test_unknown_scheme_is_a_clean_error() -> None:
    with pytest.raises(StoreUnavailableError, match="nosuchscheme"):
        open_store("nosuchscheme://bucket/x")
    with pytest.raises(StoreUnavailableError):
        open_store("")


def test_unreachable_s3_is_a_store_error() -> None:
    pytest.importorskip("s3fs")
    store = open_store(
        "s3://bucket/x",
        {
            "key": "k",
            "secret": "s",
            "endpoint_url": "http://127.0.0.1:9",
            "config_kwargs": {"connect_timeout": 1, "retries": {"max_attempts": 1}},
        },
    )
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:9|bucket"):
        store.read_bytes("a")


def test_missing_bucket_is_a_store_error(moto_s3: MotoS3) -> None:
    store = open_store(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/x", moto_s3.options())
    with pytest.raises(StoreError):
        store.write_atomic("a", b"x")


@pytest.mark.parametrize("every", [2, 3, 5])
def test_faults_are_clean_errors(tmp_path: Path, every: int) -> None:
    inner = open_store(f"file://{tmp_path}/root")
    store = FaultyStore(inner, fail_every=every, truncate_writes=True)
    local = tmp_path / "payload"
    local.write_bytes(b"p" * 1000)
    succeeded = 0
    for i in range(40):
        path = f"obj/{i // 4 % 3}"
        op = i % 4
        try:
            if op == 0:
                store.write_atomic(path, b"v" * 100)
            elif op == 1:
                store.put_file(path, str(local))
            elif op == 2:
                # Missing when both writes of this cycle failed.
                with contextlib.suppress(ObjectNotFoundError):
                    assert len(store.read_bytes(path)) in (50, 100, 500, 1000)
            else:
                assert all(p.startswith("obj/") for p in store.list("obj"))
            succeeded += 1
        except InjectedFault as exc:
            assert "injected fault" in str(exc)
    assert store.faults > 0 and succeeded > 0
