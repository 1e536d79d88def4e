"""The fetching side of a session (Kafka's FetchSessionHandler), alone and paired with the
broker's cache: incremental requests carry only changes and forgotten partitions, and every
session error or failure falls back to a full fetch that opens a new session."""

from __future__ import annotations

from typing import Any

from sparklog.broker.fetch_session import FetchPartition, FetchSessionCache
from sparklog.broker.fetch_session_handler import FetchRequestData, FetchSessionHandler
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import FetchRequestTopicsPartitions

Key = tuple[bytes, int]
T = b"t" * 16


def data(offset: int) -> FetchRequestTopicsPartitions:
    return {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": offset,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": 100,
        "replica_directory_id": bytes(16),
        "high_watermark": -1,
    }


def test_requests_follow_the_session() -> None:
    handler: FetchSessionHandler[Key] = FetchSessionHandler()
    first = handler.build({(T, 0): data(0), (T, 1): data(0)})
    assert first.full and first.session_id == 0 and len(first.to_send) == 2
    assert handler.handle_response(0, 42, [(T, 0), (T, 1)])
    # Unchanged partitions are not sent; a moved offset and a new partition are.
    second = handler.build({(T, 0): data(5), (T, 1): data(0), (T, 2): data(0)})
    assert (second.session_id, second.epoch) == (42, 1)
    assert list(second.to_send) == [(T, 0), (T, 2)] and second.to_forget == []
    assert handler.handle_response(0, 42, [(T, 0)])
    third = handler.build({(T, 0): data(5)})
    assert third.epoch == 2 and third.to_send == {} and sorted(third.to_forget) == [(T, 1), (T, 2)]
    # An incremental answer naming a partition we did not ask for: close, ask for a new one.
    assert not handler.handle_response(0, 42, [(T, 9)])
    fourth = handler.build({(T, 0): data(5)})
    assert fourth.full and fourth.session_id == 42
    # A full answer must name exactly the session's partitions.
    assert not handler.handle_response(0, 42, [])
    assert handler.build({(T, 0): data(5)}).session_id == 0


def test_errors_fall_back_to_full_fetches() -> None:
    handler: FetchSessionHandler[Key] = FetchSessionHandler()
    handler.build({(T, 0): data(0)})
    handler.handle_response(0, 7, [(T, 0)])
    handler.build({(T, 0): data(0)})
    assert not handler.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    again = handler.build({(T, 0): data(0)})
    assert again.full and again.session_id == 7  # close 7, open another
    handler.handle_response(0, 8, [(T, 0)])
    handler.build({(T, 0): data(0)})
    assert not handler.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert handler.build({(T, 0): data(0)}).session_id == 0
    handler.handle_response(0, 9, [(T, 0)])
    handler.handle_error()
    assert handler.build({(T, 0): data(0)}).full
    # A full answer without a session id keeps fetching in full.
    handler.handle_response(0, 0, [(T, 0)])
    assert handler.build({(T, 0): data(0)}).full


def serve(cache: FetchSessionCache, request: FetchRequestData[Key], hw: dict[int, int]) -> Any:
    """The broker side of one fetch over ``cache``: every partition at high watermark ``hw``."""
    partitions = [
        FetchPartition("t", T, index, d["fetch_offset"], -1, d["partition_max_bytes"])
        for (_, index), d in request.to_send.items()
    ]
    ctx = cache.new_context(
        session_id=request.session_id,
        epoch=request.epoch,
        uses_topic_ids=True,
        privileged=True,
        partitions=partitions,
        forgotten=list(request.to_forget),
        now_ms=0,
    )
    results = [
        (p, {"error_code": 0, "high_watermark": hw[p.partition], "records": b""})
        for p in ctx.partitions
    ]
    return cache.complete(ctx, results, 0)


def test_handler_and_cache_together() -> None:
    cache = FetchSessionCache()
    handler: FetchSessionHandler[Key] = FetchSessionHandler()
    hw = {0: 0, 1: 0, 2: 0}
    wanted = {(T, i): data(0) for i in hw}
    seen: dict[int, int] = {}
    for step in range(12):
        if step == 6:
            cache = FetchSessionCache()  # the leader restarted: its sessions are gone
        hw[step % 3] += 1
        request = handler.build(wanted)
        error, session_id, kept = serve(cache, request, hw)
        if handler.handle_response(error, session_id, [(T, p.partition) for p, _ in kept]):
            seen.update((p.partition, r["high_watermark"]) for p, r in kept)
        if step != 6:
            assert seen == hw, step
    # One full fetch at the start, one after the restart (FETCH_SESSION_ID_NOT_FOUND).
    assert (handler.full_requests, handler.incremental_requests) == (2, 10)
