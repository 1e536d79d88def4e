"""Plain logic of the hot read service: what goes into a chunk, and where the service listens.

Contract:
- :func:`data_batches` takes stored segment bytes (whole v2 batches, possibly with a partial
  tail) and returns the bytes of its data batches only, up to and including the batch holding
  ``end_offset - 1``, plus the offset after the last batch it looked at (control batches
  included) so the stream continues there. Bytes are never re-encoded: with no control batch
  the input slice is returned as is.
- :func:`aborted_ranges` adapts whatever the log's ``collect_aborted_transactions`` returns
  (objects with ``producer_id``/``first_offset``/``last_offset``, or tuples) to
  ``(producer_id, first_offset, last_offset)``; ``last_offset`` -1 means unknown.
- :func:`status_for` maps a Kafka error code to the gRPC status the service answers with; the
  status details always start with the Kafka error name.
- :func:`bind_address` / :func:`published_address` resolve ``sparklog.read.listener``.

No I/O, no grpc import: the status is returned by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from sparklog.config import ServerConfig
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.records import CONTROL_MASK, iter_batches

__all__ = [
    "DISABLED",
    "LISTENER_KEY",
    "aborted_ranges",
    "bind_address",
    "data_batches",
    "published_address",
    "status_for",
]

LISTENER_KEY: Final = "sparklog.read.listener"
DISABLED: Final = "disabled"
_WILDCARDS: Final = frozenset({"", "0.0.0.0", "::", "[::]"})

_STATUS_BY_CODE: Final = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "FAILED_PRECONDITION",
    ErrorCode.FENCED_LEADER_EPOCH: "FAILED_PRECONDITION",
    ErrorCode.UNKNOWN_LEADER_EPOCH: "FAILED_PRECONDITION",
    ErrorCode.LEADER_NOT_AVAILABLE: "UNAVAILABLE",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "NOT_FOUND",
    ErrorCode.OFFSET_OUT_OF_RANGE: "OUT_OF_RANGE",
    ErrorCode.INVALID_REQUEST: "INVALID_ARGUMENT",
    ErrorCode.CORRUPT_MESSAGE: "DATA_LOSS",
}


def data_batches(buf: bytes, end_offset: int) -> tuple[bytes, int]:
    """(data batches of ``buf`` up to the one holding ``end_offset - 1``, next offset)."""
    pieces: list[tuple[int, int]] = []
    next_offset = -1
    run_start = run_end = 0
    for pos, header in iter_batches(buf):
        size = header.batch_length + 12
        next_offset = header.base_offset + header.last_offset_delta + 1
        if header.attributes & CONTROL_MASK:
            if run_end > run_start:
                pieces.append((run_start, run_end))
            run_start = run_end = pos + size
        else:
            run_end = pos + size
        if next_offset >= end_offset:
            break
    if run_end > run_start:
        pieces.append((run_start, run_end))
    if len(pieces) == 1 and pieces[0] == (0, len(buf)):
        return buf, next_offset
    with memoryview(buf) as view:
        return b"".join(view[a:b] for a, b in pieces), next_offset


def aborted_ranges(found: Iterable[Any] | None) -> list[tuple[int, int, int]]:
    result: list[tuple[int, int, int]] = []
    for item in found or ():
        if isinstance(item, tuple):
            pid, first, *rest = item
            last = rest[0] if rest else -1
        else:
            pid, first = item.producer_id, item.first_offset
            last = getattr(item, "last_offset", -1)
        result.append((int(pid), int(first), int(last)))
    return result


def status_for(code: ErrorCode) -> str:
    """The name of the ``grpc.StatusCode`` a Kafka error is answered with."""
    return _STATUS_BY_CODE.get(code, "UNAVAILABLE")


def _split(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        raise ValueError(f"Invalid {LISTENER_KEY} {text!r}: expected host:port or {DISABLED}")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"Invalid {LISTENER_KEY} {text!r}: port is not a number") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"Invalid {LISTENER_KEY} {text!r}: port must be 0-65535")
    return host.strip("[]") if host.startswith("[") else host, number


def _advertised_host(config: ServerConfig) -> str:
    controller = set(config.controller_listener_names)
    for listener in config.advertised_listeners:
        if listener.name not in controller and listener.host not in _WILDCARDS:
            return listener.host
    return "localhost"


def bind_address(config: ServerConfig) -> tuple[str, int] | None:
    """Where to listen: ``(host, port)``, or None when the service is disabled."""
    value = config.get(LISTENER_KEY)
    if value is None:
        broker = config.broker_listeners
        return (broker[0].host if broker else "localhost"), 0
    if str(value).strip().lower() == DISABLED:
        return None
    return _split(str(value))


def published_address(config: ServerConfig, bound_host: str, bound_port: int) -> str:
    """The ``host:port`` readers connect to: a wildcard bind is published as the advertised
    host of the broker listeners."""
    host = _advertised_host(config) if bound_host in _WILDCARDS else bound_host
    return f"[{host}]:{bound_port}" if ":" in host else f"{host}:{bound_port}"
