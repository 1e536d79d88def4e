"""Server-side assignors of KIP-848 consumer groups: ``uniform`` (the default) and ``range``.

An assignor maps members to partitions. Input: each member's subscribed topics (topic ids),
each topic's partition count, and the previous target assignment. Output: a target
assignment. Both are pure and deterministic (same input, same output), so replaying the log
or recomputing after a restart gives the same answer.

Invariants (checked by property tests): every partition of a topic that at least one member
subscribes to is assigned to exactly one member subscribed to that topic; nothing else is
assigned. ``uniform`` also keeps a partition with its previous owner unless that leaves two
members able to share it with counts differing by more than one, and every member's count
is then within one of any other member able to take its partitions. ``range`` gives each
topic's subscribers (by member id) contiguous ranges, the first ``n % k`` one more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sparklog.coordinator.consumer_records import Assignment

TopicCounts = Mapping[bytes, int]
Subscriptions = Mapping[str, frozenset[bytes]]
Assignor = Callable[[Subscriptions, TopicCounts, Mapping[str, Assignment]], dict[str, Assignment]]


def _to_assignment(owned: dict[str, set[tuple[bytes, int]]]) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {}
    for member_id, partitions in owned.items():
        grouped: dict[bytes, set[int]] = {}
        for topic_id, partition in partitions:
            grouped.setdefault(topic_id, set()).add(partition)
        out[member_id] = {t: frozenset(p) for t, p in grouped.items()}
    return out


def uniform(
    subscriptions: Subscriptions,
    topics: TopicCounts,
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    members = sorted(subscriptions)
    owned: dict[str, set[tuple[bytes, int]]] = {m: set() for m in members}
    owner: dict[tuple[bytes, int], str] = {}
    all_partitions = sorted(
        (topic_id, p)
        for topic_id, count in topics.items()
        if any(topic_id in subs for subs in subscriptions.values())
        for p in range(count)
    )
    for member_id in members:
        for topic_id, parts in sorted(previous.get(member_id, {}).items()):
            if topic_id not in subscriptions[member_id] or topic_id not in topics:
                continue
            for p in sorted(parts):
                tp = (topic_id, p)
                if p < topics[topic_id] and tp not in owner:
                    owner[tp] = member_id
                    owned[member_id].add(tp)

    def candidates(tp: tuple[bytes, int]) -> list[str]:
        return [m for m in members if tp[0] in subscriptions[m]]

    for tp in all_partitions:
        if tp not in owner:
            target = min(candidates(tp), key=lambda m: (len(owned[m]), m))
            owner[tp] = target
            owned[target].add(tp)
    # Move partitions from crowded members to members with at least two fewer until none can
    # move: each move lowers the sum of squared counts, so this terminates.
    moved = True
    while moved:
        moved = False
        for tp in all_partitions:
            current = owner[tp]
            best = min(candidates(tp), key=lambda m: (len(owned[m]), m))
            if len(owned[best]) + 1 < len(owned[current]):
                owned[current].discard(tp)
                owned[best].add(tp)
                owner[tp] = best
                moved = True
    return _to_assignment(owned)


def range_assignor(
    subscriptions: Subscriptions,
    topics: TopicCounts,
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    owned: dict[str, set[tuple[bytes, int]]] = {m: set() for m in subscriptions}
    for topic_id, count in sorted(topics.items()):
        subscribers = sorted(m for m, subs in subscriptions.items() if topic_id in subs)
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            size = quota + (1 if index < extra else 0)
            owned[member_id].update((topic_id, p) for p in range(start, start + size))
            start += size
    return _to_assignment(owned)


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_assignor}
