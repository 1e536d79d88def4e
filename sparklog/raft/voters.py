"""The voter set of the KRaft quorum (KIP-853) and its history along the log.

A :class:`VoterSet` is an immutable set of voters, each named by a :class:`ReplicaKey` (node id
plus directory id) with its endpoints and supported ``kraft.version`` range. A node id appears at
most once.

:class:`VoterSetHistory` maps log offsets to the voter set a ``VotersRecord`` at that offset
installed, starting from the bootstrap set (offset -1: ``controller.quorum.voters`` or the
``format --initial-controllers`` checkpoint). Rules, as in Kafka's ``VoterSetHistory``:

- Entries are read from the log as soon as they are appended, committed or not: the latest set
  applies to elections and to the commit majority immediately.
- Truncating the log to ``offset`` drops every entry at ``offset`` or above, reverting to the
  set in force before (uncommitted voter changes can be undone by a new leader).
- Offsets of entries strictly increase; the bootstrap entry is never removed.
- A snapshot replaces the entries it covers with the ``VotersRecord`` it holds, filed at its
  last contained offset (:meth:`VoterSetHistory.install_snapshot`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sparklog.protocol.kafka_uuid import ZERO_UUID

BOOTSTRAP_OFFSET = -1


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica: its node id and (KIP-853) its metadata directory id; zero uuid = unknown."""

    id: int
    directory_id: bytes = ZERO_UUID

    def matches(self, other: ReplicaKey) -> bool:
        """Same node, and the same directory unless either side does not know it."""
        if self.id != other.id:
            return False
        if self.directory_id == ZERO_UUID or other.directory_id == ZERO_UUID:
            return True
        return self.directory_id == other.directory_id


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class VoterNode:
    key: ReplicaKey
    endpoints: tuple[Endpoint, ...] = ()
    min_kraft_version: int = 0
    max_kraft_version: int = 1


@dataclass(frozen=True, slots=True)
class VoterSet:
    voters: tuple[VoterNode, ...]

    def __post_init__(self) -> None:
        ids = [v.key.id for v in self.voters]
        if len(ids) != len(set(ids)):
            raise ValueError(f"duplicate voter ids in {ids}")

    @staticmethod
    def of(nodes: Iterable[VoterNode]) -> VoterSet:
        return VoterSet(tuple(sorted(nodes, key=lambda n: n.key.id)))

    @staticmethod
    def from_ids(ids: Iterable[int]) -> VoterSet:
        """A static voter set (``controller.quorum.voters``): ids without directory ids."""
        return VoterSet.of(VoterNode(ReplicaKey(i)) for i in ids)

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(v.key.id for v in self.voters)

    @property
    def keys(self) -> tuple[ReplicaKey, ...]:
        return tuple(v.key for v in self.voters)

    def node(self, node_id: int) -> VoterNode | None:
        for voter in self.voters:
            if voter.key.id == node_id:
                return voter
        return None

    def is_voter(self, key: ReplicaKey) -> bool:
        node = self.node(key.id)
        return node is not None and node.key.matches(key)

    @property
    def majority_size(self) -> int:
        return len(self.voters) // 2 + 1

    def is_majority(self, ids: Iterable[int]) -> bool:
        return len(self.ids.intersection(ids)) >= self.majority_size

    def with_voter(self, node: VoterNode) -> VoterSet:
        if self.node(node.key.id) is not None:
            raise ValueError(f"voter {node.key.id} is already in the set")
        return VoterSet.of((*self.voters, node))

    def without_voter(self, key: ReplicaKey) -> VoterSet:
        if not self.is_voter(key):
            raise ValueError(f"{key} is not a voter")
        return VoterSet(tuple(v for v in self.voters if v.key.id != key.id))

    def with_updated(self, node: VoterNode) -> VoterSet:
        return VoterSet.of(node if v.key.id == node.key.id else v for v in self.voters)

    def to_record(self) -> dict[str, Any]:
        """The body of a ``VotersRecord`` control record."""
        return {
            "voters": [
                {
                    "voter_id": v.key.id,
                    "voter_directory_id": v.key.directory_id,
                    "endpoints": [
                        {"name": e.name, "host": e.host, "port": e.port} for e in v.endpoints
                    ],
                    "kraft_version_feature": {
                        "min_supported_version": v.min_kraft_version,
                        "max_supported_version": v.max_kraft_version,
                    },
                }
                for v in self.voters
            ]
        }

    @staticmethod
    def from_record(data: Mapping[str, Any]) -> VoterSet:
        nodes = []
        for voter in data["voters"]:
            feature = voter.get("kraft_version_feature") or {}
            nodes.append(
                VoterNode(
                    ReplicaKey(int(voter["voter_id"]), bytes(voter["voter_directory_id"])),
                    tuple(
                        Endpoint(str(e["name"]), str(e["host"]), int(e["port"]))
                        for e in voter.get("endpoints") or ()
                    ),
                    int(feature.get("min_supported_version", 0)),
                    int(feature.get("max_supported_version", 0)),
                )
            )
        return VoterSet.of(nodes)


class VoterSetHistory:
    """Voter sets by the offset of the ``VotersRecord`` that installed them (see module)."""

    def __init__(self, bootstrap: VoterSet | None) -> None:
        self._offsets: list[int] = []
        self._sets: list[VoterSet] = []
        self._bootstrap = bootstrap if bootstrap is not None else VoterSet(())

    def add_at(self, offset: int, voters: VoterSet) -> None:
        if self._offsets and offset <= self._offsets[-1]:
            raise ValueError(f"voter set at {offset} is not after {self._offsets[-1]}")
        self._offsets.append(offset)
        self._sets.append(voters)

    @property
    def latest(self) -> VoterSet:
        return self._sets[-1] if self._sets else self._bootstrap

    @property
    def latest_offset(self) -> int:
        return self._offsets[-1] if self._offsets else BOOTSTRAP_OFFSET

    @property
    def bootstrap(self) -> VoterSet:
        return self._bootstrap

    def at(self, offset: int) -> VoterSet:
        """The voter set in force for an entry at ``offset`` (set by records below it)."""
        index = bisect.bisect_left(self._offsets, offset) - 1
        return self._sets[index] if index >= 0 else self._bootstrap

    def truncate_to(self, offset: int) -> None:
        keep = bisect.bisect_left(self._offsets, offset)
        del self._offsets[keep:], self._sets[keep:]

    def install_snapshot(self, last_contained_offset: int, voters: VoterSet | None) -> None:
        """A snapshot ending after ``last_contained_offset`` replaces every entry at or below
        it with the voter set it holds (none: the bootstrap set applies up to there)."""
        keep = bisect.bisect_right(self._offsets, last_contained_offset)
        del self._offsets[:keep], self._sets[:keep]
        if voters is not None:
            self._offsets.insert(0, last_contained_offset)
            self._sets.insert(0, voters)

    def entries(self) -> list[tuple[int, VoterSet]]:
        return list(zip(self._offsets, self._sets, strict=True))
