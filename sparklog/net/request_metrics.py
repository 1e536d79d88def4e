"""Kafka's per-API request metrics (``kafka.network:type=RequestMetrics``), fed by the listener.

Contract:

- :meth:`RequestMetrics.record` is called once per request a listener answered (or, for
  acks=0 Produce, handled), with the times the listener measured: queue (frame received ->
  handler started), local (handler started -> response encoded; it includes the time a request
  waits in purgatory, which Kafka reports apart as ``RemoteTimeMs``), send (response written to
  the socket's buffer) and total. It marks ``RequestsPerSec,request=<api>,version=<v>`` and
  updates the histograms ``TotalTimeMs``, ``RequestQueueTimeMs``, ``LocalTimeMs`` and
  ``ResponseSendTimeMs`` tagged ``request=<api>``, with Kafka's request names (a Fetch from a
  replica is ``FetchFollower``, from a consumer ``FetchConsumer``), plus
  ``kafka.network:type=RequestChannel,name=RequestQueueSize``-style totals are left out.
- ``ErrorsPerSec,request=<api>,error=<CODE_NAME>`` counts the error codes of the response as
  Kafka's ``errorCounts`` does: the top-level ``error_code`` and those of the per-topic and
  per-partition entries, ``NONE`` included. The walk is bounded by the response's size (one
  visit per entry), not by records, so the produce and fetch paths stay per-partition.
- Meters and histograms are created on first use and registered in the node's registry; the
  registry's Prometheus text shows them as labelled families.

No I/O: the listener (:mod:`sparklog.net.server`) calls this module.
"""

from __future__ import annotations

from typing import Any

from sparklog.metrics import Counter, Histogram, Meter, MetricName, MetricsRegistry
from sparklog.protocol.errors import ErrorCode

DOMAIN = "kafka.network"
TYPE = "RequestMetrics"
TIMES = ("TotalTimeMs", "RequestQueueTimeMs", "LocalTimeMs", "ResponseSendTimeMs")
FETCH = 1


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


def count_errors(body: Any, out: dict[int, int], depth: int = 0) -> None:
    """Add the error codes in a response body (top level and nested entries) to ``out``."""
    if depth > 3:
        return
    if isinstance(body, dict):
        code = body.get("error_code")
        if isinstance(code, int):
            out[code] = out.get(code, 0) + 1
        for value in body.values():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                for item in value:
                    count_errors(item, out, depth + 1)


class RequestMetrics:
    """The per-API request meters and time histograms of one node (all its listeners)."""

    def __init__(self, registry: MetricsRegistry) -> None:
        self._registry = registry
        self._requests: dict[tuple[str, int], Meter] = {}
        self._times: dict[str, tuple[Histogram, ...]] = {}
        self._errors: dict[tuple[str, int], Meter] = {}
        self._authentications: dict[tuple[str, str], Counter] = {}

    def authentication(self, listener: str, outcome: str) -> None:
        """Count one SASL/TLS authentication outcome of ``listener``: Kafka's
        ``kafka.server:type=socket-server-metrics,listener=<l>`` ``<outcome>-total`` with
        outcome ``successful-authentication``, ``failed-authentication``,
        ``successful-reauthentication`` or ``failed-reauthentication``."""
        counter = self._authentications.get((listener, outcome))
        if counter is None:
            name = MetricName(
                f"kafka.server:type=socket-server-metrics,listener={listener}", f"{outcome}-total"
            )
            counter = self._registry.counter(name)
            self._authentications[(listener, outcome)] = counter
        counter.inc()

    @staticmethod
    def request_name(api_name: str, api_key: int, body: Any) -> str:
        if api_key == FETCH and isinstance(body, dict):
            replica = body.get("replica_id", -1)
            state = body.get("replica_state")
            if isinstance(state, dict):
                replica = state.get("replica_id", replica)
            return "FetchFollower" if isinstance(replica, int) and replica >= 0 else "FetchConsumer"
        return api_name

    def record(
        self,
        request: str,
        version: int,
        response: Any,
        *,
        queue_ms: float,
        local_ms: float,
        send_ms: float,
    ) -> None:
        key = (request, version)
        meter = self._requests.get(key)
        if meter is None:
            meter = self._registry.meter(
                DOMAIN, TYPE, "RequestsPerSec", tags={"request": request, "version": str(version)}
            )
            self._requests[key] = meter
        meter.mark()
        histograms = self._times.get(request)
        if histograms is None:
            histograms = tuple(
                self._registry.histogram(DOMAIN, TYPE, name, tags={"request": request})
                for name in TIMES
            )
            self._times[request] = histograms
        total, queue, local, send = histograms
        total.update(queue_ms + local_ms + send_ms)
        queue.update(queue_ms)
        local.update(local_ms)
        send.update(send_ms)
        if response is not None:
            errors: dict[int, int] = {}
            count_errors(response, errors)
            for code, n in errors.items():
                self._error_meter(request, code).mark(n)

    def _error_meter(self, request: str, code: int) -> Meter:
        meter = self._errors.get((request, code))
        if meter is None:
            meter = self._registry.meter(
                DOMAIN, TYPE, "ErrorsPerSec", tags={"request": request, "error": _error_name(code)}
            )
            self._errors[(request, code)] = meter
        return meter
