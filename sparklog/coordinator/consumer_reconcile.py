"""KIP-848 reconciliation of one consumer-group member: from its current assignment, its
target and what it says it owns, the next current assignment (pure; no I/O, no clock).

Contract (:func:`next_assignment`), as Kafka's ``CurrentAssignmentBuilder``:
- A member with partitions pending revocation stays where it is until its heartbeat shows it
  owns none of them (``owned`` None: it did not say, so nothing is known to be revoked).
- A member already at the group's assignment epoch and STABLE has nothing to do.
- Revocations come first: when the target drops partitions the member still owns, it keeps
  its epoch, is assigned only what it keeps, and the dropped ones become pending revocation
  (UNREVOKED_PARTITIONS).
- Otherwise it moves to the assignment epoch and is granted its target minus the partitions
  another member still owns (held or pending revocation); if any are withheld it is
  UNRELEASED_PARTITIONS until they are released, else STABLE. Its previous epoch is the epoch
  it leaves (unchanged if the epoch does not move).
"""

from __future__ import annotations

from collections.abc import Callable

from sparklog.coordinator.consumer_records import Assignment, CurrentAssignment

__all__ = [
    "STABLE",
    "UNRELEASED_PARTITIONS",
    "UNREVOKED_PARTITIONS",
    "is_empty",
    "is_subset",
    "next_assignment",
]

# The member states of Kafka's MemberState (the persisted values).
STABLE = 1
UNREVOKED_PARTITIONS = 2
UNRELEASED_PARTITIONS = 3


def minus(a: Assignment, b: Assignment) -> Assignment:
    out = {t: p - b.get(t, frozenset()) for t, p in a.items()}
    return {t: p for t, p in out.items() if p}


def intersect(a: Assignment, b: Assignment) -> Assignment:
    out = {t: p & b.get(t, frozenset()) for t, p in a.items()}
    return {t: p for t, p in out.items() if p}


def is_empty(a: Assignment) -> bool:
    return not any(a.values())


def is_subset(a: Assignment, b: Assignment) -> bool:
    return is_empty(minus(a, b))


def next_assignment(
    current: CurrentAssignment,
    target: Assignment,
    assignment_epoch: int,
    owners: Callable[[], dict[tuple[bytes, int], str]],
    owned: Assignment | None,
) -> CurrentAssignment | None:
    """The member's next current assignment, or None when it stays as it is. ``owners``
    gives the partitions other members of the group still own (called only when needed)."""
    pending = current.pending_revocation
    if not is_empty(pending):
        # Revocation completes when the member reports it no longer owns them.
        if owned is None or not is_empty(intersect(pending, owned)):
            return None
    elif current.member_epoch == assignment_epoch and current.state == STABLE:
        return None
    revoke = minus(current.assigned, target)
    if not is_empty(revoke) and (owned is None or not is_empty(intersect(revoke, owned))):
        return CurrentAssignment(
            current.member_epoch,
            current.previous_member_epoch,
            UNREVOKED_PARTITIONS,
            intersect(current.assigned, target),
            revoke,
        )
    taken = owners()
    granted: dict[bytes, frozenset[int]] = {}
    unreleased = False
    for topic_id, parts in target.items():
        free = frozenset(p for p in parts if (topic_id, p) not in taken)
        unreleased |= free != parts
        if free:
            granted[topic_id] = free
    previous_epoch = (
        current.member_epoch
        if assignment_epoch != current.member_epoch
        else current.previous_member_epoch
    )
    state = UNRELEASED_PARTITIONS if unreleased else STABLE
    updated = CurrentAssignment(assignment_epoch, previous_epoch, state, granted, {})
    return None if updated == current else updated
