"""Kafka's checkpoint text formats and atomic replacement."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from sparklog.storage.checkpoint import (
    CheckpointError,
    read_offset_checkpoint,
    read_partition_metadata,
    uuid_to_kafka_string,
    write_offset_checkpoint,
    write_partition_metadata,
)


def test_offset_checkpoint_format(tmp_path: Path) -> None:
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    write_offset_checkpoint(path, {("orders", 0): 42, ("my-topic", 11): 7})
    assert Path(path).read_text() == "0\n2\norders 0 42\nmy-topic 11 7\n"
    assert read_offset_checkpoint(path) == {("orders", 0): 42, ("my-topic", 11): 7}
    assert not os.path.exists(path + ".tmp")


@pytest.mark.parametrize("text", ["", "1\n0\n", "0\n2\na 0 1\n", "0\n1\na b c\n", "0\n1\na 0\n"])
def test_malformed_offset_checkpoint(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        read_offset_checkpoint(str(path))


def test_partition_metadata(tmp_path: Path) -> None:
    topic_id = uuid.UUID("a4d1d5d3-4a3c-4b73-9a8f-3b1ef4a9c0a1").bytes
    path = str(tmp_path / "partition.metadata")
    write_partition_metadata(path, topic_id)
    text = Path(path).read_text()
    assert text == f"version: 0\ntopic_id: {uuid_to_kafka_string(topic_id)}\n"
    assert len(uuid_to_kafka_string(topic_id)) == 22 and "=" not in text
    assert read_partition_metadata(path) == topic_id
