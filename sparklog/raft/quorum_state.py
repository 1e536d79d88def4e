"""The persisted election state of this replica: the ``quorum-state`` file (Kafka's
``FileQuorumStateStore``).

The file sits in the metadata partition directory (``<metadata.log.dir>/__cluster_metadata-0/
quorum-state``) and holds one JSON object, Kafka's ``QuorumStateData`` v1 plus
``data_version``::

    {"leaderId": 1, "leaderEpoch": 3, "votedId": -1, "data_version": 1}

Invariants: the epoch stored never decreases; the file is replaced atomically (write a temp
file, fsync it, rename over, fsync the directory), so a crash leaves either the old or the new
state, never a torn one. Version 0 files written by older Kafka releases are read too.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass
from pathlib import Path

ZERO_UUID = bytes(16)
QUORUM_STATE_FILENAME = "quorum-state"
HIGHEST_DATA_VERSION = 1


class QuorumStateError(Exception):
    """The quorum-state file exists but cannot be read; the message names the file."""


@dataclass(frozen=True, slots=True)
class ElectionState:
    leader_epoch: int = 0
    leader_id: int = -1
    voted_id: int = -1
    voted_directory_id: bytes = ZERO_UUID

    def to_json(self) -> str:
        data: dict[str, object] = {
            "leaderId": self.leader_id,
            "leaderEpoch": self.leader_epoch,
            "votedId": self.voted_id,
        }
        if self.voted_directory_id != ZERO_UUID:
            text = base64.urlsafe_b64encode(self.voted_directory_id).decode().rstrip("=")
            data["votedDirectoryId"] = text
        data["data_version"] = HIGHEST_DATA_VERSION
        return json.dumps(data)


def _uuid(text: object) -> bytes:
    raw = base64.urlsafe_b64decode(str(text) + "==")
    if len(raw) != 16:
        raise ValueError(f"votedDirectoryId {text!r} is not a uuid")
    return raw


class QuorumStateStore:
    """Reads and atomically writes ``quorum-state`` at ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def read(self) -> ElectionState | None:
        """The stored state, or ``None`` if the file does not exist yet."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            version = data.get("data_version")
            if not isinstance(version, int):
                raise ValueError("it does not have a data_version field")
            if not 0 <= version <= HIGHEST_DATA_VERSION:
                raise ValueError(
                    f"data_version ({version}) is not within the min (0) and max "
                    f"({HIGHEST_DATA_VERSION}) supported version"
                )
            directory = data.get("votedDirectoryId")
            return ElectionState(
                leader_epoch=int(data.get("leaderEpoch", -1)),
                leader_id=int(data.get("leaderId", -1)),
                voted_id=int(data.get("votedId", -1)),
                voted_directory_id=_uuid(directory) if directory else ZERO_UUID,
            )
        except (ValueError, TypeError, binascii.Error) as exc:
            raise QuorumStateError(f"Error reading quorum state file {self.path}: {exc}") from None

    def write(self, state: ElectionState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(state.to_json())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
