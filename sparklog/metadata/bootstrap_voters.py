"""The formatted KRaft voter set (KIP-853): ``bootstrap.voters`` in ``metadata.log.dir``.

``sparklog storage format --standalone`` or ``--initial-controllers`` fixes the first voter set
of a dynamic quorum; Kafka keeps it in the metadata log's bootstrap checkpoint, we keep it in a
small JSON file next to ``bootstrap.checkpoint``. The first leader copies it into the log as a
``VotersRecord``, after which the log (not this file) is the source of truth. A node formatted
with ``--no-initial-controllers`` (a broker, or a controller that joins later with
``add-controller``) has no file and learns the voters by fetching from
``controller.quorum.bootstrap.servers``.

Invariants: the file is written once, atomically (temp file, fsync, rename); directory ids are
the 22-character base64 form ``sparklog storage random-uuid`` prints.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sparklog.protocol.kafka_uuid import uuid_from_str, uuid_to_str
from sparklog.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet

BOOTSTRAP_VOTERS = "bootstrap.voters"


def write_bootstrap_voters(directory: str | Path, voters: VoterSet) -> Path:
    path = Path(directory) / BOOTSTRAP_VOTERS
    payload: dict[str, Any] = {
        "voters": [
            {
                "id": node.key.id,
                "directory_id": uuid_to_str(node.key.directory_id),
                "endpoints": [
                    {"name": e.name, "host": e.host, "port": e.port} for e in node.endpoints
                ],
            }
            for node in voters.voters
        ]
    }
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as out:
        json.dump(payload, out, indent=1)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    return path


def read_bootstrap_voters(directory: str | Path) -> VoterSet | None:
    """The formatted voter set, or None when the node was formatted without one."""
    path = Path(directory) / BOOTSTRAP_VOTERS
    try:
        payload = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    nodes = [
        VoterNode(
            ReplicaKey(int(v["id"]), uuid_from_str(v["directory_id"])),
            tuple(Endpoint(e["name"], e["host"], int(e["port"])) for e in v["endpoints"]),
        )
        for v in payload["voters"]
    ]
    return VoterSet.of(nodes)
