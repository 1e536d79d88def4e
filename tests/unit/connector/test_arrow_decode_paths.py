"""The connector's use of the shared vectorised decoder (:mod:`sparklog.tiering.batch_decode`)
against record_codec's record loop (its exact path) and the reference codec.

The same builder is run twice over random logs, once with every batch offered to the numpy path
(``vector_min_records = 1``) and once with none, and the two ``RecordBatch``es must be equal,
column by column and null for null; both must also match ``record_codec.decode_batch``. The
logs mix null keys and values, headers, one- to three-byte length varints, multi-byte
timestamp deltas, compacted offset gaps, every codec, LogAppendTime, control batches and
aborted transactions, and reads are cut inside batches. Direct tests check the numpy path
really decodes (not declines) plain batches and batches with headers, and damaged input gives
both paths the same outcome.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.connector.arrow_decode import AbortedTransactions, ArrowRecordBuilder
from sparklog.protocol import compression as codecs
from sparklog.protocol.record_codec import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    RecordInput,
    build_batch,
    build_control_batch,
    decode_batch,
)
from sparklog.protocol.records import TIMESTAMP_LOG_APPEND_TIME, CorruptRecordError
from sparklog.tiering import batch_decode

_ALL_CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]
_NEVER = 10**9

# Sizes straddling the one/two/three-byte varint limits (63, 8191 after the zigzag).
_blob = st.one_of(
    st.none(),
    st.binary(max_size=80),
    st.integers(60, 300).map(lambda n: b"v" * n),
    st.sampled_from([b"b" * 8191, b"c" * 9000]),
)
Spec = tuple[list[RecordInput], int, bool, int, int, int | None]
_headers = st.lists(
    st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=10))), max_size=2
)


@st.composite
def _batch(draw: st.DrawFn) -> Spec:
    """(records, codec, LogAppendTime, offset gap before, transactional pid, control kind)."""
    count = draw(st.integers(1, 40))
    with_headers = draw(st.integers(0, 4)) == 0
    gaps = draw(st.lists(st.integers(1, 3), min_size=count, max_size=count))
    compacted = draw(st.booleans())
    records = []
    delta = 0
    for i in range(count):
        if i:
            delta += gaps[i] if compacted else 1
        records.append(
            RecordInput(
                key=draw(_blob),
                value=draw(_blob),
                headers=tuple(draw(_headers)) if with_headers else (),
                timestamp=draw(st.integers(0, 2**41)),
                offset_delta=delta,
            )
        )
    return (
        records,
        draw(st.sampled_from(_ALL_CODECS)),
        draw(st.booleans()),
        draw(st.integers(0, 2)),
        draw(st.sampled_from([0, 0, 1, 2])),
        draw(st.sampled_from([None, None, None, CONTROL_ABORT, CONTROL_COMMIT])),
    )


def _encode(specs: list[Spec]) -> tuple[bytes, list[tuple[int, int]]]:
    """The log and the (producer id, base offset) of each transactional batch."""
    out = bytearray()
    transactions: list[tuple[int, int]] = []
    offset = 0
    for records, codec, log_append, gap, pid, control in specs:
        offset += gap
        if pid:
            transactions.append((pid, offset))
        out += build_batch(
            records,
            base_offset=offset,
            compression=codec,
            timestamp_type=TIMESTAMP_LOG_APPEND_TIME if log_append else 0,
            max_timestamp=1_700_000_000_000 if log_append else None,
            producer_id=pid if pid else -1,
            producer_epoch=0 if pid else -1,
            base_sequence=0 if pid else -1,
            is_transactional=bool(pid),
        )
        offset += (records[-1].offset_delta or 0) + 1
        if pid and control is not None:
            out += build_control_batch(
                control, base_offset=offset, producer_id=pid, producer_epoch=0
            )
            offset += 1
    return bytes(out), transactions


def _decode(
    buf: bytes,
    start: int,
    end: int,
    include_headers: bool,
    vector_min_records: int,
    aborted: list[tuple[int, int]] | None,
) -> tuple[tuple[int, int], pa.RecordBatch]:
    builder = ArrowRecordBuilder("t", 7, include_headers)
    builder.vector_min_records = vector_min_records
    tracker = None
    if aborted is not None:
        tracker = AbortedTransactions()
        for pid, first in aborted:
            tracker.add(pid, first)
    # Two calls, as the hot reader makes them: the second continues after the first's batches.
    middle = len(buf) // 2
    consumed, next_offset = builder.add(buf[:middle], start, end, tracker)
    rest, next_rest = builder.add(buf[consumed:], start, end, tracker)
    return (consumed + rest, max(next_offset, next_rest)), builder.build()


def _reference(buf: bytes, start: int, end: int) -> list[tuple[int, bytes | None, bytes | None]]:
    rows = []
    pos = 0
    while pos < len(buf):
        header, records = decode_batch(buf, pos)
        pos += header.size_in_bytes
        if not header.is_control:
            rows += [(r.offset, r.key, r.value) for r in records if start <= r.offset < end]
    return rows


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(_batch(), min_size=1, max_size=4),
    include_headers=st.booleans(),
    cut=st.tuples(st.integers(0, 150), st.integers(0, 150)),
    abort_some=st.one_of(st.none(), st.lists(st.booleans(), min_size=4, max_size=4)),
)
def test_numpy_path_equals_python_path(
    specs: list[Spec],
    include_headers: bool,
    cut: tuple[int, int],
    abort_some: list[bool] | None,
) -> None:
    buf, transactions = _encode(specs)
    start, end = min(cut), max(cut) + 1
    aborted = None
    if abort_some is not None:
        aborted = [t for t, chosen in zip(transactions, abort_some, strict=False) if chosen]
    fast_position, fast = _decode(buf, start, end, include_headers, 1, aborted)
    slow_position, slow = _decode(buf, start, end, include_headers, _NEVER, aborted)
    assert fast_position == slow_position
    assert fast.schema == slow.schema
    assert fast.equals(slow), (fast.to_pydict(), slow.to_pydict())
    if aborted is None:
        expected = _reference(buf, start, end)
        got = list(
            zip(
                fast.column("offset").to_pylist(),
                fast.column("key").to_pylist(),
                fast.column("value").to_pylist(),
                strict=True,
            )
        )
        assert got == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(
        st.builds(RecordInput, key=_blob, value=_blob, timestamp=st.integers(0, 2**41)),
        min_size=1,
        max_size=30,
    ),
    cut=st.tuples(st.integers(0, 40), st.integers(0, 40)),
    log_append=st.booleans(),
)
def test_numpy_path_decodes_plain_batches_itself(
    records: list[RecordInput], cut: tuple[int, int], log_append: bool
) -> None:
    buf = build_batch(records, base_offset=5)
    low, high = min(cut), max(cut) + 1
    batch = batch_decode.BatchRecords(
        buf, 61, len(buf), len(records), 5, 1_000, 2_000, log_append, low, high
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch_decode, "_exact", _no_exact_path)
        decoded = batch_decode.decode_records([batch])
    wanted = [(i + 5, r) for i, r in enumerate(records) if low <= i + 5 < high]
    assert decoded.rows == len(wanted) == int(decoded.batch_rows.sum())
    assert decoded.offsets.tolist() == [offset for offset, _ in wanted]
    assert decoded.keys.to_pylist() == [r.key for _, r in wanted]
    assert decoded.values.to_pylist() == [r.value for _, r in wanted]
    expected_ts = [2_000 if log_append else 1_000 + (r.timestamp or 0) - (records[0].timestamp or 0)
                   for _, r in wanted]  # fmt: skip
    assert decoded.timestamps.tolist() == expected_ts


def _no_exact_path(*_: object) -> None:
    raise AssertionError("the vector path declined a batch it must decode")


def test_records_with_headers_are_decoded_by_the_vector_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buf = build_batch([(b"k", b"v", (("h", b"x"), ("\u00e9", None)))] * 20, base_offset=0)
    monkeypatch.setattr(batch_decode, "_exact", _no_exact_path)
    builder = ArrowRecordBuilder("t", 0, True)
    builder.vector_min_records = 1
    builder.add(buf, 0, 100)
    expected = [[{"key": "h", "value": b"x"}, {"key": "\u00e9", "value": None}]] * 20
    assert builder.build().column("headers").to_pylist() == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=400), st.integers(0, 399), st.booleans())
def test_damage_gives_both_paths_the_same_outcome(
    noise: bytes, at: int, include_headers: bool
) -> None:
    records = [(b"k" * (i % 3), None if i % 5 == 0 else b"v" * (i * 7)) for i in range(30)]
    buf = bytearray(build_batch(records, base_offset=0))
    at = 61 + at % (len(buf) - 61)
    buf[at : at + len(noise)] = noise[: len(buf) - at]
    outcomes: list[tuple[tuple[int, int], pa.RecordBatch] | None] = []
    for vector_min_records in (1, _NEVER):
        try:
            outcomes.append(_decode(bytes(buf), 0, 100, include_headers, vector_min_records, None))
        except CorruptRecordError:
            outcomes.append(None)
    fast, slow = outcomes
    if fast is None or slow is None:
        assert fast is slow
    else:
        assert fast[0] == slow[0] and fast[1].equals(slow[1])


def test_paths_alternate_within_one_build() -> None:
    plain = [(b"k%d" % i, b"v" * i) for i in range(30)]
    with_headers = [(b"h", b"x", (("a", b"1"),))] * 30
    batches = [
        build_batch(plain, base_offset=0),
        build_batch(with_headers, base_offset=30),
        build_batch(plain, base_offset=60, compression=codecs.ZSTD),
        build_batch(with_headers, base_offset=90, compression=codecs.LZ4),
        build_batch(plain, base_offset=120),
    ]
    built = []
    for vector_min_records in (1, _NEVER):
        builder = ArrowRecordBuilder("t", 0, False)
        builder.vector_min_records = vector_min_records
        for batch in batches:
            builder.add(batch, 0, 1000)
        built.append(builder.build())
    assert built[0].equals(built[1])
    assert built[0].column("offset").to_pylist() == list(range(150))
