"""Client quotas on the request path: record, answer with ``throttle_time_ms``, mute the channel.

As Kafka 2.0+ does (KIP-219): a request over its quota is answered at once, its response
carrying ``throttle_time_ms``, and the connection is muted for that time: the next request
read from it waits until the throttle has passed (requests on a connection are served one at
a time, so this is Kafka's channel mute; the client's own back-off adds nothing).

- Produce records the bytes of its record batches (the request size Kafka records),
  Fetch the bytes of records in its response (a replica's Fetch is exempt, as replication has
  its own quotas), every request its handling time against ``request_percentage``.
- The throttle time sent and muted is the larger of the bandwidth and request-time ones.
- No quota in the image: :func:`serve_with_quotas` is not called at all (see
  :class:`~sparklog.broker.quotas.QuotaManagers.active`).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, cast

from sparklog.broker.authz import is_replica_fetch
from sparklog.broker.quotas import QuotaManagers
from sparklog.protocol.headers import Request
from sparklog.protocol.message_types import ApiKey, FetchRequest, FetchResponse, ProduceRequest
from sparklog.protocol.types import nbytes

# Connection -> time.monotonic() at which it may be read from again
_MUTED_UNTIL: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
PRODUCE_KEY, FETCH_KEY = ApiKey.PRODUCE, ApiKey.FETCH
# APIs a request-time quota never throttles (Kafka exempts ApiVersions and SASL, which a
# throttled client needs to keep its connection).
_REQUEST_QUOTA_EXEMPT = frozenset({17, 18, 36})


def _size(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, list | tuple):
        return sum(_size(v) for v in value)
    return nbytes(value)


def produce_bytes(body: ProduceRequest) -> int:
    return sum(
        _size(p.get("records")) for t in body.get("topic_data") or () for p in t["partition_data"]
    )


def fetch_bytes(response: FetchResponse) -> int:
    return sum(
        _size(p.get("records"))
        for t in response.get("responses") or ()
        for p in t.get("partitions") or ()
    )


def _has_throttle_field(request: Request) -> bool:
    return any(f.name == "throttle_time_ms" for f in request.api.response.fields)


async def wait_while_muted(conn: Any) -> None:
    """Hold the connection's next request until its throttle time has passed."""
    until = _MUTED_UNTIL.get(conn)
    if until is None:
        return
    delay = until - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)
    _MUTED_UNTIL.pop(conn, None)


async def serve_with_quotas(
    quotas: QuotaManagers,
    request: Request,
    conn: Any,
    serve: Callable[[], Awaitable[dict[str, Any] | None]],
) -> dict[str, Any] | None:
    started = time.monotonic()
    response = await serve()
    finished = time.monotonic()
    now_ms = finished * 1000.0  # the clock the mute uses: rates and mutes stay in step
    session = getattr(conn, "session", None)
    user = session.principal.name if session is not None else ""
    client_id = request.header.client_id or ""
    key = request.api.key
    bandwidth = 0
    # dispatched by key: the bodies are Produce's and Fetch's
    if key == PRODUCE_KEY:
        produced = produce_bytes(cast("ProduceRequest", request.body))
        bandwidth = quotas.produce.record(user, client_id, produced, now_ms)
    elif (
        key == FETCH_KEY
        and response is not None
        and not is_replica_fetch(cast("FetchRequest", request.body))
    ):
        fetched = fetch_bytes(cast("FetchResponse", response))
        bandwidth = quotas.fetch.record(user, client_id, fetched, now_ms)
    request_time = 0
    if key not in _REQUEST_QUOTA_EXEMPT:
        percent_seconds = (finished - started) * 100.0
        request_time = quotas.request.record(user, client_id, percent_seconds, now_ms)
    throttle_ms = max(bandwidth, request_time)
    if throttle_ms > 0:
        _MUTED_UNTIL[conn] = finished + throttle_ms / 1000.0
        if response is not None and _has_throttle_field(request):
            previous = int(response.get("throttle_time_ms") or 0)
            response["throttle_time_ms"] = max(previous, throttle_ms)
    return response
