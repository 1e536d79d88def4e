"""The fast batch path: tiered offsets read by Spark's own Parquet scan, the hot tail by the
``sparklog`` source.

``sparklog.connector.read(spark).option(...).load()`` takes exactly the options of
``spark.read.format("sparklog")`` (parsed by :mod:`.options`, planned by :mod:`.planning`: same
names, semantics and errors) and returns a DataFrame with the same rows and Spark's Kafka source
schema (:mod:`.schema`, ``headers`` with ``includeHeaders``). Planning reads each manifest once.

Contract of the plan:
- Cold pieces become ``spark.read.parquet`` scans of the tier objects the manifests name
  (finished segments, clipped at the log start offset and the requested range), one scan per
  partition and kind, projected and cast to the Kafka schema (``topic`` and ``partition`` are
  literals, ``timestamp`` is ``timestamp_millis`` of the stored ms, ``timestampType`` an int).
- Objects that are ``filter_free`` (wholly inside the range, no control row, and under
  read_committed no aborted row, per the manifest's counts) are scanned without any filter, so
  Spark's optimisations reach the files: ``count()`` reads no column, ``sum(length(value))``
  only ``value``. The other objects (range boundaries, transactional segments, manifests
  without counts) get ``offset`` bounds and ``NOT is_control`` (``NOT aborted`` under
  read_committed), which Spark pushes into the Parquet reader (row groups are skipped on their
  statistics). User filters on ``partition`` drop whole scans (the literal folds), those on
  ``offset`` and ``timestamp`` are pushed into every scan.
- Hot pieces are read by the ``sparklog`` Python data source, handed the planned pieces in the
  internal option :data:`HOT_PIECES_OPTION` (no second plan, same ends); the parts are combined
  with ``unionByName`` after an empty frame of Spark's schema, so the result's schema (all
  nullable) equals the data source's whatever the parts.
- The store must be readable by Spark's Hadoop file systems: ``file://``, ``hdfs://``,
  ``gs://``..., and ``s3://`` read as ``s3a://`` (the ``sparklog.store.s3.*`` endpoint and keys
  become the scans' ``fs.s3a.*`` options) when hadoop-aws is on the classpath. Otherwise
  (``memory://``, S3 without hadoop-aws) the whole read falls back to ``format("sparklog")``.
- ``failOnDataLoss=false`` sets the Parquet scans' ``ignoreMissingFiles`` (an object deleted
  by retention after planning is skipped); with true Spark fails the query on it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .options import SourceOptions, parse_options
from .planning import (
    ColdObject,
    ColdPiece,
    HotPiece,
    batch_pieces,
    hot_pieces_to_json,
    split_pieces,
)
from .schema import HEADERS_DDL, spark_ddl

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["HOT_PIECES_OPTION", "SparklogBatchRead", "read"]

#: Internal option: the hot pieces a native plan already planned, as JSON.
HOT_PIECES_OPTION: Final = "sparklog.internal.hotPieces"

#: The tier's columns the scans read (a given schema: Spark reads no footer to plan).
_TIER_SCHEMA: Final = (
    "offset BIGINT, timestamp BIGINT, timestamp_type TINYINT, key BINARY, value BINARY,"
    " headers ARRAY<STRUCT<key: STRING, value: BINARY>>, is_control BOOLEAN, aborted BOOLEAN"
)
_HADOOP_SCHEMES: Final = ("file", "s3a", "gs", "abfs", "abfss", "hdfs", "wasb", "wasbs")
_S3A_CLASS: Final = "org.apache.hadoop.fs.s3a.S3AFileSystem"


def _spark_url(spark: SparkSession, store_url: str) -> str | None:
    """``store_url`` as Spark's file systems name it; None when Spark cannot read it (an
    ``s3`` store without hadoop-aws on the classpath reads through the data source)."""
    scheme, sep, rest = store_url.partition("://")
    if not sep:
        return None
    if scheme in ("s3", "s3a"):
        scheme = "s3a"
        try:
            spark._jvm.java.lang.Class.forName(_S3A_CLASS)  # type: ignore[union-attr]
        except Exception:  # a py4j error, or Spark Connect (no JVM to ask)
            return None
    return f"{scheme}://{rest.rstrip('/')}" if scheme in _HADOOP_SCHEMES else None


def _hadoop_options(options: SourceOptions) -> dict[str, str]:
    """The store's S3 settings as per-scan Hadoop options (Spark merges them into the scan's
    Hadoop configuration)."""
    store = options.store_options
    result = {"ignoreMissingFiles": _option_text(not options.fail_on_data_loss)}
    if "endpoint_url" in store:
        result["fs.s3a.endpoint"] = str(store["endpoint_url"])
        result["fs.s3a.path.style.access"] = "true"
    if "key" in store:
        result["fs.s3a.access.key"] = str(store["key"])
    if "secret" in store:
        result["fs.s3a.secret.key"] = str(store["secret"])
    return result


def _option_text(value: Any) -> str:
    # As DataFrameReader.option: booleans as true/false, everything else as str().
    return str(value).lower() if isinstance(value, bool) else str(value)


class SparklogBatchRead:
    """Builder of a batch read (the ``DataFrameReader`` idiom): ``option``, ``options``,
    ``load``."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._options: dict[str, str] = {}

    def option(self, key: str, value: Any) -> SparklogBatchRead:
        self._options[key] = _option_text(value)
        return self

    def options(self, **options: Any) -> SparklogBatchRead:
        for key, value in options.items():
            self.option(key, value)
        return self

    def load(self) -> DataFrame:
        return _load(self._spark, dict(self._options))


def read(spark: SparkSession) -> SparklogBatchRead:
    """``read(spark).option("kafka.bootstrap.servers", ...).option("subscribe", t).load()``."""
    return SparklogBatchRead(spark)


def _source(spark: SparkSession, raw: Mapping[str, str]) -> Any:
    from .source import SparklogDataSource

    # Idempotent, and needed when pyspark_sparklog is not on the workers' path.
    spark.dataSource.register(SparklogDataSource)
    reader = spark.read.format("sparklog")
    for key, value in raw.items():
        reader = reader.option(key, value)
    return reader


def _load(spark: SparkSession, raw: Mapping[str, str]) -> DataFrame:
    options = parse_options(raw)
    base_url = _spark_url(spark, options.store_url or "") if options.uses_store else None
    if options.uses_store and base_url is None:
        frame: DataFrame = _source(spark, raw).load()
        return frame
    pieces = batch_pieces(options)
    cold: dict[tuple[str, int], list[ColdObject]] = defaultdict(list)
    hot: list[HotPiece] = []
    for piece in pieces:
        if isinstance(piece, ColdPiece):
            cold[(piece.topic, piece.partition)].extend(piece.objects)
        else:
            hot.append(piece)
    frames = []
    for (topic, partition), objects in sorted(cold.items()):
        assert base_url is not None
        frames.extend(_cold_frames(spark, options, base_url, topic, partition, objects))
    if hot:
        split = split_pieces(list(hot), options.max_records_per_partition, options.min_partitions)
        hot_json = hot_pieces_to_json(p for p in split if isinstance(p, HotPiece))
        frames.append(_source(spark, {**raw, HOT_PIECES_OPTION: hot_json}).load())
    result = _schema_anchor(spark, options.include_headers)
    for frame in frames:
        result = result.unionByName(frame)
    return result


def _schema_anchor(spark: SparkSession, include_headers: bool) -> DataFrame:
    """An empty frame of exactly the Kafka source schema, every column nullable as in Spark's.

    A union's columns are nullable when any child's are, so starting the union with it gives
    the result Spark's schema whatever the scans' nullability (a literal ``topic`` or the
    stored ``offset`` are not null); the optimizer drops the empty branch (``Filter false``).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(spark_ddl(include_headers))
    assert isinstance(schema, StructType)
    nulls = [F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields]
    return spark.range(1).select(*nulls).where(F.lit(False))


def _cold_frames(
    spark: SparkSession,
    options: SourceOptions,
    base_url: str,
    topic: str,
    partition: int,
    objects: Sequence[ColdObject],
) -> list[DataFrame]:
    from pyspark.sql import functions as F

    frames = []
    free = [o for o in objects if o.filter_free]
    boundary = [o for o in objects if not o.filter_free]
    for group, filtered in ((free, False), (boundary, True)):
        if not group:
            continue
        scan = (
            spark.read.schema(_TIER_SCHEMA)
            .options(**_hadoop_options(options))
            .parquet(*[f"{base_url}/{o.path}" for o in group])
        )
        if filtered:
            keep = (
                (F.col("offset") >= min(o.start for o in group))
                & (F.col("offset") < max(o.end for o in group))
                & ~F.coalesce(F.col("is_control"), F.lit(False))
            )
            if options.read_committed:
                keep = keep & ~F.coalesce(F.col("aborted"), F.lit(False))
            scan = scan.where(keep)
        frames.append(scan.select(*_kafka_columns(topic, partition, options.include_headers)))
    return frames


def _kafka_columns(topic: str, partition: int, include_headers: bool) -> list[Column]:
    from pyspark.sql import functions as F

    columns = [
        F.col("key"),
        F.col("value"),
        F.lit(topic).alias("topic"),
        F.lit(partition).cast("int").alias("partition"),
        F.col("offset"),
        F.timestamp_millis(F.col("timestamp")).alias("timestamp"),
        F.col("timestamp_type").cast("int").alias("timestampType"),
    ]
    if include_headers:
        headers_type = HEADERS_DDL.split(" ", 1)[1]
        columns.append(F.col("headers").cast(headers_type).alias("headers"))
    return columns
