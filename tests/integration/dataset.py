"""The deterministic record set every client test produces and then checks.

Record ``i`` of a codec's run goes to partition ``i % PARTITIONS`` with a key, a value and
headers derived from ``i`` alone, so a consumer can verify content and per-partition order
without keeping what was sent. A few records carry a null key, a null value (tombstone) or an
empty header value to cover those encodings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PARTITIONS = 3
RECORDS_PER_CODEC = 20_000  # 5 codecs x 20k = 100k records per client library

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class Expected:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass(frozen=True, slots=True)
class Consumed:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers


def expected(codec: str, index: int) -> Expected:
    key = None if index % 1009 == 5 else f"key-{index}".encode()
    if index % 997 == 3:
        value: bytes | None = None
    else:
        # Repetitive enough to compress, distinct enough to catch reordering.
        value = f"{codec}:{index:08d}:".encode() + b"payload-" * (4 + index % 9)
    headers: Headers = (("seq", str(index).encode()), ("codec", codec.encode()), ("empty", b""))
    return Expected(index % PARTITIONS, key, value, headers)


def normalize_headers(raw: Iterable[tuple[str, bytes | None]] | None) -> Headers:
    if raw is None:
        return ()
    return tuple((name, None if value is None else bytes(value)) for name, value in raw)


def verify(codec: str, count: int, consumed: Sequence[Consumed]) -> None:
    """Assert ``consumed`` is exactly records 0..count-1 of ``codec``, dense and in order."""
    by_partition: dict[int, list[Consumed]] = defaultdict(list)
    for record in consumed:
        by_partition[record.partition].append(record)
    wanted: dict[int, list[int]] = defaultdict(list)
    for index in range(count):
        wanted[index % PARTITIONS].append(index)
    assert sorted(by_partition) == sorted(wanted), "partitions seen differ from partitions sent"
    for partition, indexes in wanted.items():
        got = by_partition[partition]
        offsets = [record.offset for record in got]
        assert offsets == list(range(len(indexes))), (
            f"partition {partition}: offsets not dense from 0 "
            f"(first {offsets[:5]}, count {len(offsets)}, expected {len(indexes)})"
        )
        for record, index in zip(got, indexes, strict=True):
            want = expected(codec, index)
            actual = Expected(record.partition, record.key, record.value, record.headers)
            assert actual == want, f"partition {partition} offset {record.offset}: record {index}"
