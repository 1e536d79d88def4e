"""A fake clock and a harness that drives a GroupShard the way the coordinator does."""

from __future__ import annotations

from typing import Any

from sparklog.coordinator.group_metadata import Effects, GroupConfig, JoinResult, SyncResult
from sparklog.coordinator.rebalance import GroupShard, JoinRequest, SyncRequest
from sparklog.coordinator.records import decode_record

# Two topics of a consumer (KIP-848) group's metadata: name -> (topic id, partition count).
T1 = b"\x01" * 16
T2 = b"\x02" * 16
TOPICS = {"t1": (T1, 6), "t2": (T2, 3)}


def resolve(name: str) -> tuple[bytes, int] | None:
    """The TopicResolver of :data:`TOPICS`."""
    return TOPICS.get(name)


class Clock:
    """A settable clock in milliseconds (``now``)."""

    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


class FakeClock:
    def __init__(self, now_ms: int = 1_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


class Answer:
    """Captures what a responder was called with (at most once)."""

    def __init__(self) -> None:
        self.value: Any = None
        self.calls = 0

    def __call__(self, value: Any) -> None:
        self.calls += 1
        self.value = value

    @property
    def done(self) -> bool:
        return self.calls > 0

    @property
    def join(self) -> JoinResult:
        assert isinstance(self.value, JoinResult), self.value
        return self.value

    @property
    def sync(self) -> SyncResult:
        assert isinstance(self.value, SyncResult), self.value
        return self.value


class Harness:
    def __init__(self, **config: int) -> None:
        self.clock = FakeClock()
        self.ids = 0
        self.shard = GroupShard(GroupConfig(**config), self.clock, self._new_id)
        self.log: list[tuple[bytes, bytes | None]] = []

    def _new_id(self, client_id: str) -> str:
        self.ids += 1
        return f"{client_id}-{self.ids}"

    def run(self, fx: Effects) -> None:
        self.log.extend(fx.records)
        for responder, result in fx.replies:
            responder(result)

    def join(
        self,
        member_id: str = "",
        group: str = "g",
        protocols: tuple[tuple[str, bytes], ...] = (("range", b"m"),),
        instance_id: str | None = None,
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        protocol_type: str = "consumer",
        require_known: bool = True,
    ) -> Answer:
        answer = Answer()
        fx = Effects()
        request = JoinRequest(
            group_id=group,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=protocols,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            client_id="c",
            require_known_member=require_known,
        )
        self.shard.join_group(request, answer, fx)
        self.run(fx)
        return answer

    def join_new(self, **kwargs: Any) -> Answer:
        """v4+ join: MEMBER_ID_REQUIRED then the second join with the id."""
        first = self.join(**kwargs)
        assert first.join.error == 79, first.value
        return self.join(member_id=first.join.member_id, **kwargs)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        group: str = "g",
        instance_id: str | None = None,
    ) -> Answer:
        answer = Answer()
        fx = Effects()
        request = SyncRequest(
            group, generation, member_id, instance_id, None, None, assignments or {}
        )
        self.shard.sync_group(request, answer, fx)
        self.run(fx)
        return answer

    def leave(self, group: str, *members: tuple[str, str | None]) -> Any:
        fx = Effects()
        out = self.shard.leave_group(group, list(members), fx)
        self.run(fx)
        return out

    def tick(self, advance_ms: int = 0) -> None:
        self.clock.advance(advance_ms)
        fx = Effects()
        self.shard.tick(fx)
        self.run(fx)

    def replay_into(self, other: GroupShard) -> None:
        for key, value in self.log:
            record = decode_record(key, value)
            assert record is not None
            other.replay(record)
