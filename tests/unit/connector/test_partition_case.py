"""The native plan's ``partition`` of a shared scan (``native._partition_case``) without Spark:
files are named by size where no other partition's object has that size, by file name where
sizes collide, and the plan falls back (None) when names collide too, a colliding name is not
plain, or there is a single partition."""

from __future__ import annotations

from sparklog.connector.native import _partition_case
from sparklog.connector.planning import ColdObject


def _obj(path: str, size: int) -> ColdObject:
    return ColdObject(path, 0, 10, size, True)


def test_distinct_sizes_are_a_size_case() -> None:
    case = _partition_case({0: [_obj("a/0/x.parquet", 100)], 1: [_obj("a/1/y.parquet", 200)]})
    assert case is not None
    assert case.startswith("CASE _metadata.file_size WHEN 100 THEN 0 WHEN 200 THEN 1 ELSE")
    assert "file_name" not in case and "raise_error(" in case


def test_shared_sizes_are_told_apart_by_name() -> None:
    free = {
        0: [_obj("a/0/x.parquet", 100), _obj("file:///tmp/t-0-5-ab.parquet", 300)],
        1: [_obj("a/1/y.parquet", 200), _obj("file:///tmp/t-1-5-cd.parquet", 300)],
    }
    case = _partition_case(free)
    assert case == (
        "CASE _metadata.file_size WHEN 100 THEN 0 WHEN 200 THEN 1 ELSE CASE _metadata.file_name"
        " WHEN 't-0-5-ab.parquet' THEN 0 WHEN 't-1-5-cd.parquet' THEN 1 ELSE raise_error("
        "'sparklog: a tier object\\'s size differs from its manifest entry') END END"
    )
    # The same size twice within one partition is no collision.
    same = {0: [_obj("a/x.parquet", 100), _obj("a/z.parquet", 100)], 1: [_obj("b/y", 200)]}
    assert "file_name" not in (_partition_case(same) or "")


def test_undecidable_or_single_partition_falls_back() -> None:
    twins = {0: [_obj("a/0/x.parquet", 100)], 1: [_obj("a/1/x.parquet", 100)]}
    assert _partition_case(twins) is None
    odd = {0: [_obj("a/0/x y.parquet", 100)], 1: [_obj("a/1/z.parquet", 100)]}
    assert _partition_case(odd) is None
    assert _partition_case({0: [_obj("a/0/x.parquet", 100)]}) is None
    unknown = {0: [_obj("a/0/x.parquet", 0)], 1: [_obj("a/1/y.parquet", 0)]}
    assert _partition_case(unknown) == (
        "CASE _metadata.file_name WHEN 'x.parquet' THEN 0 WHEN 'y.parquet' THEN 1 ELSE raise_error("
        "'sparklog: a tier object\\'s size differs from its manifest entry') END"
    )
