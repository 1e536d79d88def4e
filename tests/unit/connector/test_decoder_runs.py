"""The decoder's record-start search (no Spark needed): runs of equal-sized records found by
numpy must give exactly the starts a record-by-record walk gives, for every mix of runs,
sizes straddling the one/two/three-byte varint limits, and damaged bytes; and whole batches
of such runs must decode to the same rows on the numpy path as on record_codec's record loop.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.connector.arrow_decode import ArrowRecordBuilder
from sparklog.protocol.record_codec import RecordInput, build_batch
from sparklog.tiering import batch_decode

_HEADER_BYTES = 61
_NEVER = 10**9

# (value size, how many records in a row have it): sizes around 63 and 8191, the varint limits,
# and 100/164/228, whose two-byte length varints differ in the second byte only.
_runs = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 5, 40, 52, 53, 54, 100, 164, 228, 8170, 8180, 8200]),
        st.integers(1, 40),
    ),
    min_size=1,
    max_size=6,
)


def _records(runs: list[tuple[int, int]], null_every: int) -> list[RecordInput]:
    records: list[RecordInput] = []
    for size, repeat in runs:
        for _ in range(repeat):
            index = len(records)
            value = None if null_every and index % null_every == 0 else b"v" * size
            records.append(RecordInput(key=b"k%03d" % (index % 7), value=value, timestamp=index))
    return records


def _walk_starts(buf: bytes, count: int) -> list[int] | None:
    found = batch_decode._walk(buf, _HEADER_BYTES, count)
    return None if found is None else found.tolist()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=_runs, null_every=st.sampled_from([0, 0, 3, 7]))
def test_runs_give_the_starts_of_a_walk(runs: list[tuple[int, int]], null_every: int) -> None:
    records = _records(runs, null_every)
    buf = build_batch(records, base_offset=0)
    found = batch_decode._record_starts(buf, _HEADER_BYTES, len(buf), len(records))
    assert found is not None
    assert found.dtype == np.int64
    assert found.tolist() == _walk_starts(buf, len(records))


@settings(max_examples=300, deadline=None)
@given(
    runs=_runs,
    noise=st.binary(min_size=1, max_size=6),
    at=st.integers(0, 10**6),
    extra=st.integers(-3, 3),
)
def test_damaged_runs_give_the_walk_or_fail_like_it(
    runs: list[tuple[int, int]], noise: bytes, at: int, extra: int
) -> None:
    records = _records(runs, 0)
    buf = bytearray(build_batch(records, base_offset=0))
    at = _HEADER_BYTES + at % (len(buf) - _HEADER_BYTES)
    buf[at : at + len(noise)] = noise[: len(buf) - at]
    data = bytes(buf)
    count = max(1, len(records) + extra)
    outcomes: list[list[int] | str | None] = []
    searches: list[Callable[[], npt.NDArray[np.int64] | None]] = [
        lambda: batch_decode._record_starts(data, _HEADER_BYTES, len(data), count),
        lambda: batch_decode._walk(data, _HEADER_BYTES, count),
    ]
    for search in searches:
        try:
            found = search()
            outcomes.append(None if found is None else found.tolist())
        except IndexError:
            outcomes.append("IndexError")
    runs_found, walked = outcomes
    if runs_found in (None, "IndexError") or walked in (None, "IndexError"):
        # Either may give up where the other reads on: the caller then takes the Python
        # loops, which decide; only starts that both found must agree.
        return
    # The run search stops guessing at the region's end; the walk goes on with garbage there.
    assert isinstance(runs_found, list) and isinstance(walked, list)
    inside = [s for s in walked if s < len(data)]
    assert runs_found[: len(inside)] == inside


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(_runs, min_size=1, max_size=4),
    null_every=st.sampled_from([0, 5]),
    cut=st.tuples(st.integers(0, 300), st.integers(0, 300)),
)
def test_batches_of_runs_decode_alike_on_both_paths(
    batches: list[list[tuple[int, int]]], null_every: int, cut: tuple[int, int]
) -> None:
    buf = b""
    base = 0
    for runs in batches:
        records = _records(runs, null_every)
        buf += build_batch(records, base_offset=base)
        base += len(records)
    start, end = min(cut), max(cut) + 1
    built = []
    for vector_min_records in (1, _NEVER):
        builder = ArrowRecordBuilder("t", 3, False)
        builder.vector_min_records = vector_min_records
        position = builder.add(buf, start, end)
        built.append((position, builder.build()))
    (fast_position, fast), (slow_position, slow) = built
    assert fast_position == slow_position
    assert fast.equals(slow), (fast.to_pydict(), slow.to_pydict())


def test_uniform_batch_is_found_in_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [RecordInput(key=b"%016d" % i, value=b"x" * 100, timestamp=0) for i in range(60)]
    buf = build_batch(records, base_offset=0)

    def no_walk(*_: object) -> None:
        raise AssertionError("a uniform batch must not be walked record by record")

    monkeypatch.setattr(batch_decode, "_walk", no_walk)
    found = batch_decode._record_starts(buf, _HEADER_BYTES, len(buf), len(records))
    assert found is not None and len(found) == 60
    assert found[1] - found[0] == (len(buf) - _HEADER_BYTES) // 60
