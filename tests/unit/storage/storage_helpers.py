"""Helpers for the storage tests: a controllable clock and a batch builder."""

from __future__ import annotations

from sparklog.protocol.record_codec import build_batch


class FakeClock:
    def __init__(self, now_ms: int = 1_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def batch(
    n: int = 1, *, ts: int = 1_000_000, value_size: int = 10, key: bytes = b"k", **kw: object
) -> bytes:
    """A batch of ``n`` records with timestamps ts, ts+1, ..."""
    records = [(key, bytes([65 + i % 26]) * value_size, (), ts + i) for i in range(n)]
    return build_batch(records, **kw)  # type: ignore[arg-type]
