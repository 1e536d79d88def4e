"""The rows the connector yields: Spark's Kafka source schema, as Spark and as Arrow.

Contract: every batch a reader yields has exactly :func:`arrow_schema` (names, order, types and
nullability), the schema pyspark derives from :data:`SPARK_DDL` with ``timezone="UTC"``; Spark
validates only the first batch, so a later mismatch would surface as an obscure JVM error.
``timestamp`` is the record's epoch-ms timestamp as ``timestamp[us, tz=UTC]`` (Spark's
TimestampType is an instant, so the session time zone only affects display). ``headers`` is
null for a record without headers, as in Spark's Kafka source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "BASE_DDL",
    "HEADERS_DDL",
    "arrow_schema",
    "build_batch",
    "headers_array",
    "spark_ddl",
]

BASE_DDL: Final = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT,"
    " timestamp TIMESTAMP, timestampType INT"
)
HEADERS_DDL: Final = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"

HEADERS_TYPE: Final = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
_BASE_FIELDS: Final = (
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
)
_SCHEMA_BASE: Final = pa.schema(list(_BASE_FIELDS))
_SCHEMA_HEADERS: Final = pa.schema([*_BASE_FIELDS, pa.field("headers", HEADERS_TYPE)])


def spark_ddl(include_headers: bool) -> str:
    return f"{BASE_DDL}, {HEADERS_DDL}" if include_headers else BASE_DDL


def arrow_schema(include_headers: bool) -> pa.Schema:
    return _SCHEMA_HEADERS if include_headers else _SCHEMA_BASE


def build_batch(
    *,
    topic: str,
    partition: int,
    keys: pa.Array,
    values: pa.Array,
    offsets: pa.Array,
    timestamps_ms: pa.Array,
    timestamp_types: pa.Array,
    headers: pa.Array | None,
    include_headers: bool,
) -> pa.RecordBatch:
    """One batch in the exact output schema from column arrays of any compatible types."""
    count = len(offsets)
    micros = pc.multiply(timestamps_ms.cast(pa.int64()), 1000)
    columns: list[pa.Array] = [
        keys.cast(pa.binary()),
        values.cast(pa.binary()),
        pa.array([topic] * count, pa.string()) if count else pa.array([], pa.string()),
        pa.array([partition] * count, pa.int32()) if count else pa.array([], pa.int32()),
        offsets.cast(pa.int64()),
        micros.cast(pa.timestamp("us", tz="UTC")),
        timestamp_types.cast(pa.int32()),
    ]
    if include_headers:
        if headers is None:
            headers = pa.nulls(count, HEADERS_TYPE)
        columns.append(headers.cast(HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def headers_array(rows: Sequence[Sequence[tuple[str, bytes | None]]]) -> pa.Array:
    """Per-record header lists as Arrow; an empty list becomes null (Spark's convention)."""
    return pa.array(
        [[{"key": k, "value": v} for k, v in row] if row else None for row in rows],
        HEADERS_TYPE,
    )
