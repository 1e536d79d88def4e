"""The committed gRPC stubs are what the documented protoc command makes of hot_read.proto."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sparklog.readservice_wire

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path("sparklog/readservice_wire")
GENERATED = ("hot_read_pb2.py", "hot_read_pb2.pyi", "hot_read_pb2_grpc.py")


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools is not installed"
)
def test_committed_stubs_are_fresh(tmp_path: Path) -> None:
    doc = sparklog.readservice_wire.__doc__ or ""
    assert "python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=." in doc
    (tmp_path / PACKAGE).mkdir(parents=True)
    shutil.copy(ROOT / PACKAGE / "hot_read.proto", tmp_path / PACKAGE / "hot_read.proto")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I.",
            "--python_out=.",
            "--pyi_out=.",
            "--grpc_python_out=.",
            str(PACKAGE / "hot_read.proto"),
        ],
        cwd=tmp_path,
        check=True,
    )
    stale = [
        name
        for name in GENERATED
        if (tmp_path / PACKAGE / name).read_bytes() != (ROOT / PACKAGE / name).read_bytes()
    ]
    assert not stale, f"regenerate {stale} as sparklog/readservice_wire/__init__.py says"
