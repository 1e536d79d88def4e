"""Remote fetch rebuilds batches at the codecs' fast levels (``FAST_LEVELS``): the bytes
differ from the segment's where a codec's level shows, but every batch keeps its codec,
boundaries, producer fields and records, as the property test of the default levels
checks (there byte for byte)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.tiering.batch_encode import FAST_LEVELS
from sparklog.tiering.parquet_batches import parquet_to_batches
from sparklog.tiering.transcode import segment_to_parquet

from .test_transcode import BatchSpec, batch_spec, build_segment, decode_all, same_batch


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(batch_spec(), min_size=1, max_size=8), start=st.integers(0, 40))
def test_fast_levels_keep_every_batch(specs: list[BatchSpec], start: int) -> None:
    segment = build_segment(specs)
    data, stats = segment_to_parquet(segment, row_group_rows=4)
    assert isinstance(data, bytes)
    start = min(start, stats.end_offset)
    original = [b for b in decode_all(segment) if b[0].last_offset >= start]
    rebuilt = decode_all(parquet_to_batches(data, start, 1 << 30, levels=FAST_LEVELS))
    assert len(rebuilt) == len(original)
    for a, b in zip(original, rebuilt, strict=True):
        same_batch(a, b)
        assert a[0].compression == b[0].compression
