"""``controller.quorum.auto.join.enable`` (KIP-853): a new controller adds itself as a voter.

A controller formatted with ``--no-initial-controllers`` starts as an observer of the quorum.
With ``controller.quorum.auto.join.enable=true`` it then sends AddRaftVoter for itself (its
``node.id``, the directory id of its ``metadata.log.dir`` and its advertised controller
endpoints) to the KRaft leader, as ``sparklog metadata-quorum add-controller`` would, once:

- the log says the quorum is dynamic (``kraft.version`` >= 1; a static
  ``controller.quorum.voters`` quorum never changes its voters);
- it follows a leader it has fetched from, and its log end offset has reached the high
  watermark the leader told it (caught up; the leader also waits for that before it appends
  the VotersRecord);
- its id is not a voter yet. A voter with our id but another directory id (a controller whose
  disk was replaced) is left alone and logged: removing it is an operator's decision here
  (``metadata-quorum remove-controller``), while Kafka 4.1 removes it automatically.

Attempts are ``controller.quorum.fetch.timeout.ms`` apart (Kafka's auto-join timer). A refusal
(another change in progress, not caught up yet, no leader) is retried; success, or
DUPLICATE_VOTER, ends the job until the node is an observer again (removed by an operator).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, cast

from sparklog.config import ServerConfig, controller_endpoints
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import AddRaftVoterRequest, AddRaftVoterResponse
from sparklog.protocol.messages import API_BY_KEY
from sparklog.raft.rpc import ADD_RAFT_VOTER
from sparklog.raft.state import Follower
from sparklog.server.plane import MetadataPlane

log = logging.getLogger(__name__)

Send = Callable[[int, int, Mapping[str, Any]], Coroutine[Any, Any, dict[str, Any]]]


def auto_join_enabled(config: ServerConfig) -> bool:
    return config.is_controller and bool(config.get("controller.quorum.auto.join.enable"))


class AutoJoin:
    def __init__(self, config: ServerConfig, plane: MetadataPlane, cluster_id: str, send: Send):
        self._config = config
        self._plane = plane
        self._cluster_id = cluster_id
        self._send = send
        self.interval_ms = int(config.get("controller.quorum.fetch.timeout.ms"))
        self.attempts = 0
        self.joined = False
        self._warned_directory = False

    def should_request(self) -> bool:
        """True when this controller is a caught-up observer of a dynamic quorum."""
        replica = self._plane.replica
        if replica.kraft_version < 1 or replica.is_voter:
            return False
        role = replica.quorum.role
        if not isinstance(role, Follower) or not role.has_fetched:
            return False
        if replica.log_end_offset < replica.high_watermark or replica.high_watermark <= 0:
            return False
        voter = replica.voters.latest.node(replica.node_id)
        if voter is not None:
            if not self._warned_directory:
                self._warned_directory = True
                log.warning(
                    "Controller %d does not auto-join: voter %s has our id but another "
                    "directory id; remove it with metadata-quorum remove-controller",
                    replica.node_id,
                    voter.key,
                )
            return False
        return True

    def request_body(self) -> AddRaftVoterRequest:
        replica = self._plane.replica
        return {
            "cluster_id": self._cluster_id,
            "timeout_ms": self.interval_ms,
            "voter_id": replica.node_id,
            "voter_directory_id": replica.local.directory_id,
            "listeners": [
                {"name": e["name"], "host": e["host"], "port": e["port"]}
                for e in controller_endpoints(self._config)
            ],
            "ack_when_committed": True,
        }

    async def attempt(self) -> bool:
        """Send AddRaftVoter once if due; True if this controller is (now) a voter."""
        if self._plane.replica.is_voter:
            return True
        if not self.should_request():
            return False
        self.attempts += 1
        api = API_BY_KEY[ADD_RAFT_VOTER]
        answer = await self._send(ADD_RAFT_VOTER, api.max_version, self.request_body())
        response = cast("AddRaftVoterResponse", answer)
        code = int(response.get("error_code", 0))
        if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_VOTER):
            log.info("Controller %d joined the voters (auto-join)", self._plane.replica.node_id)
            self.joined = True
            return True
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        log.info(
            "Auto-join of controller %d not done yet: %s %s",
            self._plane.replica.node_id,
            name,
            response.get("error_message") or "",
        )
        return False

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self.attempt()
            except Exception:
                log.exception("auto-join attempt failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.interval_ms / 1000)
