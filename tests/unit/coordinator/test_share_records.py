"""Share-group records of ``__consumer_offsets`` (KIP-932): what a change writes, and that a
coordinator replaying them knows the members, their epochs and assignments."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sparklog.broker.coordinator_runtime import ReplicaManagerRuntime
from sparklog.coordinator.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sparklog.coordinator.group_metadata import GroupConfig
from sparklog.coordinator.share_records import (
    SHARE_CURRENT_MEMBER,
    SHARE_GROUP_METADATA,
    SHARE_MEMBER_METADATA,
    SHARE_STATE_PARTITION_METADATA,
    SHARE_TARGET_MEMBER,
    SHARE_TARGET_METADATA,
    Image,
    group_image,
    image_changes,
    rebuild_group,
    record_type,
    replay_share_record,
)
from sparklog.protocol.errors import ErrorCode
from sparklog.share.share_group import ShareGroup, ShareGroups, ShareHeartbeat
from tests.unit.coordinator.txn_support import FakeClock, replica_manager

TOPICS = {"a": (b"\x01" * 16, 3), "b": (b"\x02" * 16, 2)}
PARTITIONS = 2


def resolve(name: str) -> tuple[bytes, int] | None:
    return TOPICS.get(name)


def beat(
    groups: ShareGroups, member: str, epoch: int, topics: tuple[str, ...] | None = None
) -> int:
    result = groups.heartbeat(ShareHeartbeat("g", member, epoch, None, topics, "cid"), resolve, 0)
    assert result.error == ErrorCode.NONE, result
    return result.member_epoch


def same(left: ShareGroup, right: ShareGroup) -> None:
    assert (left.group_epoch, left.assignment_epoch) == (right.group_epoch, right.assignment_epoch)
    assert left.target == right.target
    assert left.metadata_hash == right.metadata_hash
    assert left.initialized_topics == right.initialized_topics
    assert left.members.keys() == right.members.keys()
    for member_id, m in left.members.items():
        r = right.members[member_id]
        assert (m.member_epoch, m.previous_epoch, m.assignment) == (
            r.member_epoch,
            r.previous_epoch,
            r.assignment,
        )
        assert (m.client_id, m.rack_id, m.subscribed_topic_names) == (
            r.client_id,
            r.rack_id,
            r.subscribed_topic_names,
        )


def test_image_round_trips_and_changes_replay() -> None:
    groups = ShareGroups(session_timeout_ms=1000, max_size=10)
    persisted: Image = {}
    replayed: dict[str, Image] = {}

    def persist() -> list[int]:
        nonlocal persisted
        new = group_image(groups.groups["g"], resolve) if "g" in groups.groups else {}
        written = image_changes(persisted, new)
        for key, value in written:
            replay_share_record(replayed, key, value)
        persisted = new
        return [record_type(key) for key, _ in written]

    epoch_one = beat(groups, "m1", 0, ("a",))
    kinds = persist()
    assert set(kinds) == {
        SHARE_MEMBER_METADATA,
        SHARE_GROUP_METADATA,
        SHARE_TARGET_METADATA,
        SHARE_TARGET_MEMBER,
        SHARE_CURRENT_MEMBER,
        SHARE_STATE_PARTITION_METADATA,
    }
    # Kafka's order: member metadata and target before the epochs, current assignment after.
    assert kinds.index(SHARE_MEMBER_METADATA) < kinds.index(SHARE_GROUP_METADATA)
    assert kinds.index(SHARE_GROUP_METADATA) < kinds.index(SHARE_CURRENT_MEMBER)
    # a heartbeat that changes nothing but the session clock writes nothing
    assert beat(groups, "m1", epoch_one) == epoch_one
    assert persist() == []
    beat(groups, "m2", 0, ("a", "b"))
    beat(groups, "m1", epoch_one)
    persist()
    rebuilt = rebuild_group("g", replayed["g"], 5)
    assert rebuilt is not None
    same(groups.groups["g"], rebuilt)
    assert all(m.last_seen_ms == 5 for m in rebuilt.members.values())
    # a member leaving is a set of tombstones
    beat(groups, "m2", -1)
    kinds = persist()
    rebuilt = rebuild_group("g", replayed["g"], 5)
    assert rebuilt is not None and set(rebuilt.members) == {"m1"}
    same(groups.groups["g"], rebuilt)
    assert kinds[-3:] == [SHARE_CURRENT_MEMBER, SHARE_TARGET_MEMBER, SHARE_MEMBER_METADATA]
    # deleting the group tombstones every record it had
    beat(groups, "m1", -1)
    persist()
    assert groups.delete("g") == ErrorCode.NONE
    persist()
    assert "g" not in replayed


def test_image_without_group_metadata_is_no_group() -> None:
    groups = ShareGroups(session_timeout_ms=1000, max_size=10)
    beat(groups, "m1", 0, ("a",))
    image = group_image(groups.groups["g"], resolve)
    partial = {k: v for k, v in image.items() if record_type(k) != SHARE_GROUP_METADATA}
    assert rebuild_group("g", partial, 0) is None


def _coordinator(root: Path) -> GroupCoordinator:
    clock = FakeClock()
    replicas = replica_manager(root, {OFFSETS_TOPIC: PARTITIONS}, clock)
    return GroupCoordinator(GroupConfig(), PARTITIONS, ReplicaManagerRuntime(replicas), clock=clock)


def test_new_coordinator_replays_members_epochs_and_assignments(tmp_path: Path) -> None:
    async def run() -> None:
        c = _coordinator(tmp_path)

        async def heartbeat(
            coordinator: GroupCoordinator, member: str, epoch: int, topics: tuple[str, ...] | None
        ) -> int:
            return await coordinator.run_share_op(
                "g", lambda groups: beat(groups, member, epoch, topics), resolve
            )

        e1 = await heartbeat(c, "m1", 0, ("a", "b"))
        e2 = await heartbeat(c, "m2", 0, ("a",))
        e1 = await heartbeat(c, "m1", e1, None)
        before = c.share_groups.groups["g"]
        # a coordinator on the same log (a new leader of the partition) loads it on first use
        fresh = GroupCoordinator(GroupConfig(), PARTITIONS, c.runtime, clock=c.clock)
        assert await heartbeat(fresh, "m1", e1, None) == e1
        assert await heartbeat(fresh, "m2", e2, None) == e2
        same(before, fresh.share_groups.groups["g"])
        # a member that leaves on the new coordinator is gone for the next one too
        await heartbeat(fresh, "m2", -1, None)
        third = GroupCoordinator(GroupConfig(), PARTITIONS, c.runtime, clock=c.clock)
        third.load_led_shards()
        assert set(third.share_groups.groups["g"].members) == {"m1"}
        same(fresh.share_groups.groups["g"], third.share_groups.groups["g"])

    asyncio.run(run())


def test_replayed_members_still_time_out() -> None:
    groups = ShareGroups(session_timeout_ms=1000, max_size=10)
    beat(groups, "m1", 0, ("a",))
    rebuilt = rebuild_group("g", group_image(groups.groups["g"], resolve), 10_000)
    assert rebuilt is not None
    loaded = ShareGroups(session_timeout_ms=1000, max_size=10)
    loaded.groups["g"] = rebuilt
    assert loaded.expire(10_500, resolve) == []
    assert loaded.expire(11_001, resolve) == [("g", "m1")]
