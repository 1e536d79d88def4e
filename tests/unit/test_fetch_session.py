"""The fetch-session cache (KIP-227) on its own: contexts, epochs, forgotten partitions, which
partitions an incremental response carries, and Kafka's eviction rule; a property test replays
random fetches and checks a client rebuilding its view from incremental responses always sees
what full fetches would show."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchContext,
    FetchPartition,
    FetchSessionCache,
    next_epoch,
)
from sparklog.protocol.errors import ErrorCode

TOPIC_ID = b"t" * 16


def part(index: int, offset: int = 0, topic: str = "t") -> FetchPartition:
    return FetchPartition(topic, TOPIC_ID, index, offset, 0, 1 << 20)


def answer(hw: int, records: bytes = b"", error: int = 0, start: int = 0) -> dict[str, Any]:
    return {
        "error_code": error,
        "high_watermark": hw,
        "last_stable_offset": hw,
        "log_start_offset": start,
        "preferred_read_replica": -1,
        "records": records,
    }


def context(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    partitions: list[FetchPartition],
    forgotten: list[tuple[bytes | str, int]] | None = None,
    now_ms: int = 0,
    privileged: bool = False,
) -> FetchContext:
    return cache.new_context(
        session_id=session_id,
        epoch=epoch,
        uses_topic_ids=True,
        privileged=privileged,
        partitions=partitions,
        forgotten=forgotten or [],
        now_ms=now_ms,
    )


def open_session(
    cache: FetchSessionCache, count: int, now_ms: int = 0, privileged: bool = False
) -> int:
    partitions = [part(i) for i in range(count)]
    ctx = context(cache, 0, INITIAL_EPOCH, partitions, now_ms=now_ms, privileged=privileged)
    error, session_id, kept = cache.complete(ctx, [(p, answer(0)) for p in ctx.partitions], now_ms)
    assert error == ErrorCode.NONE and len(kept) == count
    return session_id


def test_epochs() -> None:
    assert next_epoch(INITIAL_EPOCH) == 1
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_full_then_incremental_carries_only_changes() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, 3)
    assert session_id > 0 and len(cache) == 1 and cache.total_partitions == 3
    ctx = context(cache, session_id, 1, [])
    assert ctx.incremental and [p.partition for p in ctx.partitions] == [0, 1, 2]
    results = [(p, answer(5 if p.partition == 1 else 0)) for p in ctx.partitions]
    error, same_id, kept = cache.complete(ctx, results, 0)
    assert (error, same_id) == (ErrorCode.NONE, session_id)
    assert [p.partition for p, _ in kept] == [1]  # only the HW that moved
    # Records, a log start change and errors are always sent; the rest is left out.
    ctx = context(cache, session_id, 2, [part(0, offset=0)])
    results = [
        (ctx.partitions[0], answer(0, records=b"x")),
        (ctx.partitions[1], answer(5, start=3)),
        (ctx.partitions[2], answer(-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)),
    ]
    _, _, kept = cache.complete(ctx, results, 0)
    assert [p.partition for p, _ in kept] == [0, 1, 2]
    # The partition that returned records moved to the end (round-robin under max_bytes).
    assert [p.partition for p in context(cache, session_id, 3, []).partitions] == [1, 2, 0]


def test_error_partition_is_resent_when_it_clears() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, 1)
    ctx = context(cache, session_id, 1, [])
    cache.complete(ctx, [(ctx.partitions[0], answer(-1, error=6))], 0)
    ctx = context(cache, session_id, 2, [])
    _, _, kept = cache.complete(ctx, [(ctx.partitions[0], answer(0))], 0)
    assert len(kept) == 1  # HW 0 again, but the session forgot it on the error


def test_session_errors() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, 2)
    assert context(cache, session_id + 1, 1, []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert context(cache, session_id, 7, []).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    wrong_kind = cache.new_context(
        session_id=session_id,
        epoch=1,
        uses_topic_ids=False,
        privileged=False,
        partitions=[],
        forgotten=[],
        now_ms=0,
    )
    assert wrong_kind.error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    no_results: list[tuple[FetchPartition, dict[str, object]]] = []
    error, sid, kept = cache.complete(wrong_kind, no_results, 0)
    assert (error, sid, kept) == (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, 0, [])
    # A duplicate of the same request: the second answer finds the epoch moved on.
    first = context(cache, session_id, 1, [])
    assert cache.complete(first, [], 0)[0] == ErrorCode.NONE
    second = context(cache, session_id, 2, [])
    third = context(cache, session_id, 3, [])
    assert cache.complete(second, [], 0)[0] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.complete(third, [], 0)[:2] == (ErrorCode.NONE, session_id)


def test_forgotten_and_final_close() -> None:
    cache = FetchSessionCache()
    session_id = open_session(cache, 2)
    ctx = context(cache, session_id, 1, [], forgotten=[(TOPIC_ID, 0)])
    assert [p.partition for p in ctx.partitions] == [1]
    assert cache.total_partitions == 1
    # Forgetting the last partition closes the session (the answer carries session id 0).
    ctx = context(cache, session_id, 2, [], forgotten=[(TOPIC_ID, 1)])
    assert not ctx.incremental and cache.complete(ctx, [], 0)[1] == 0 and len(cache) == 0
    session_id = open_session(cache, 2)
    # epoch -1 (FINAL) closes the session named and creates none.
    ctx = context(cache, session_id, FINAL_EPOCH, [part(0)])
    assert cache.complete(ctx, [(ctx.partitions[0], answer(0))], 0)[1] == 0
    assert len(cache) == 0 and cache.total_partitions == 0
    # epoch 0 naming a session closes it and opens another.
    first = open_session(cache, 1)
    ctx = context(cache, first, INITIAL_EPOCH, [part(0)])
    second = cache.complete(ctx, [(ctx.partitions[0], answer(0))], 0)[1]
    assert second not in (0, first) and list(cache.sessions) == [second]


def test_no_slots_no_sessions() -> None:
    cache = FetchSessionCache(max_entries=0)
    assert open_session(cache, 3) == 0 and len(cache) == 0


def test_eviction_prefers_stale_then_small_and_protects_followers() -> None:
    evicted: list[int] = []
    cache = FetchSessionCache(
        max_entries=2, eviction_ms=1_000, rng=random.Random(1), on_evict=lambda: evicted.append(1)
    )
    small = open_session(cache, 2, now_ms=0)
    big = open_session(cache, 5, now_ms=0)
    # Both are new (not yet evictable by anyone): a bigger consumer session cannot get in.
    assert open_session(cache, 10, now_ms=500) == 0
    # Past eviction_ms the least recently used one is stale and makes room.
    context(cache, big, 1, [], now_ms=1_500)  # uses big (and marks it evictable)
    third = open_session(cache, 3, now_ms=2_000)
    assert third and small not in cache.sessions and evicted == [1]
    # Nothing stale now; big (5 partitions, old) is evictable by a larger consumer session only.
    assert open_session(cache, 4, now_ms=2_100) == 0
    fourth = open_session(cache, 6, now_ms=2_200)
    assert fourth and big not in cache.sessions and len(evicted) == 2
    # A follower (privileged) may evict a young consumer session, whatever its size...
    follower = open_session(cache, 1, now_ms=2_300, privileged=True)
    assert follower and len(cache) == 2 and len(evicted) == 3
    # ...but a consumer never evicts a young follower session (nor a young consumer one).
    assert open_session(cache, 100, now_ms=2_400) == 0
    assert follower in cache.sessions and len(evicted) == 3


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),  # partition whose state moves
            st.sampled_from(["hw", "start", "error", "records", "nothing"]),
            st.booleans(),  # forget it in this request (re-added next time)
        ),
        min_size=1,
        max_size=40,
    )
)
def test_incremental_view_matches_full(steps: list[tuple[int, str, bool]]) -> None:
    """A client applying incremental answers to its view of (HW, log start, error) holds
    exactly what a full answer of every partition would say, after every fetch."""
    cache = FetchSessionCache()
    state = {i: {"hw": 0, "start": 0, "error": 0} for i in range(5)}
    session_id = open_session(cache, 5)
    view = {i: (0, 0, 0) for i in range(5)}
    epoch = 1
    re_add: list[int] = []
    for index, change, forget in steps:
        if change == "hw":
            state[index]["hw"] += 1
        elif change == "start":
            state[index]["start"] += 1
        elif change == "error":
            state[index]["error"] = 0 if state[index]["error"] else 6
        forgotten: list[tuple[bytes | str, int]] = [(TOPIC_ID, index)] if forget else []
        ctx = context(cache, session_id, epoch, [part(i) for i in re_add], forgotten)
        if not ctx.incremental:
            return  # everything was forgotten: the session closed
        re_add = [index] if forget else []
        results = []
        for p in ctx.partitions:
            s = state[p.partition]
            records = b"r" if change == "records" and p.partition == index else b""
            hw = -1 if s["error"] else s["hw"]
            results.append((p, answer(hw, records, s["error"], s["start"])))
        error, sid, kept = cache.complete(ctx, results, 0)
        assert (error, sid) == (ErrorCode.NONE, session_id)
        for p, response in kept:
            view[p.partition] = (
                response["high_watermark"],
                response["log_start_offset"],
                response["error_code"],
            )
        sent = {p.partition for p, _ in kept}
        assert change != "records" or index in sent or index in forgotten_indices(forgotten)
        for p in ctx.partitions:
            s = state[p.partition]
            expected = (-1 if s["error"] else s["hw"], s["start"], s["error"])
            if s["error"]:
                assert p.partition in sent  # errors are always sent
            else:
                assert view[p.partition] == expected
        epoch = next_epoch(epoch)


def forgotten_indices(forgotten: list[tuple[bytes | str, int]]) -> set[int]:
    return {index for _, index in forgotten}


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 4),
    st.lists(
        st.tuples(
            st.sampled_from(["open", "use", "close"]),
            st.integers(0, 6),  # size of a new session, or which session to use / close
            st.booleans(),  # privileged
            st.integers(0, 700),  # ms since the previous step
        ),
        max_size=60,
    ),
)
def test_cache_bookkeeping(slots: int, steps: list[tuple[str, int, bool, int]]) -> None:
    """Whatever happens, the cache holds at most its slots, counts its partitions and
    evictions right, and never evicts a young follower session for a consumer's."""
    evictions: list[int] = []
    cache = FetchSessionCache(slots, eviction_ms=1_000, on_evict=lambda: evictions.append(1))
    now = 0
    for action, number, privileged, elapsed in steps:
        now += elapsed
        ids = sorted(cache.sessions)
        if action == "open":
            before = dict(cache.sessions)
            session_id = open_session(cache, number, now_ms=now, privileged=privileged)
            gone = [s for i, s in before.items() if i not in cache.sessions]
            assert len(gone) <= 1 and (session_id > 0 or not gone)
            for victim in gone:
                stale = now - victim.last_used_ms > 1_000
                old_when_used = victim.last_used_ms - victim.creation_ms > 1_000
                assert stale or old_when_used or (privileged and not victim.privileged)
        elif ids and action == "use":
            session = cache.sessions[ids[number % len(ids)]]
            used = context(cache, session.id, session.epoch, [], now_ms=now)
            # A session left without partitions closes (Kafka's sessionless answer).
            assert used.incremental == bool(session.partitions)
            assert (session.id in cache.sessions) == bool(session.partitions)
        elif ids:
            context(cache, ids[number % len(ids)], FINAL_EPOCH, [], now_ms=now)
        assert len(cache) <= slots
        assert cache.total_partitions == sum(len(s.partitions) for s in cache.sessions.values())
        assert cache.evictions == len(evictions)
