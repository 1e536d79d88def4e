"""The fast batch path: tiered offsets read by Spark's own Parquet scan, the hot tail by the
``sparklog`` source.

``sparklog.connector.read(spark).option(...).load()`` takes exactly the options of
``spark.read.format("sparklog")`` (parsed by :mod:`.options`, planned by :mod:`.planning`: same
names, semantics and errors) and returns a DataFrame with the same rows and Spark's Kafka source
schema (:mod:`.schema`, ``headers`` with ``includeHeaders``). Planning reads each manifest once.

Contract of the plan:
- Cold pieces become ``spark.read.parquet`` scans of the tier objects the manifests name
  (finished segments, clipped at the log start offset and the requested range), projected and
  cast to the Kafka schema (``topic`` a literal, ``timestamp`` is ``timestamp_millis`` of the
  stored ms, ``timestampType`` an int). The filter-free objects (below) of all of a topic's
  partitions are one scan. Under a ``local`` master with local files (a ``file://`` store, hot
  tail files) its ``partition`` comes from ``partition=N`` directories of links to the files
  (:mod:`.local_layout`: Spark's partition discovery, a constant per file, so ``count()``
  reads nothing; a ``CASE`` over ``_metadata`` makes Spark build the metadata struct for every
  row). Otherwise ``partition`` is a ``CASE`` over each file's size
  (``_metadata.file_size``, which Spark fills per file without reading it), and over its name
  (``_metadata.file_name``) for the files whose size another partition's object shares (when
  those names are unique); otherwise, and for the filtered objects, one scan per partition
  with ``partition`` a literal. Each scan costs Spark a fixed amount (a
  ``count()`` over four per-partition scans took twice the CPU of one scan).
- Objects that are ``filter_free`` (wholly inside the range, no control row, and under
  read_committed no aborted row, per the manifest's counts) are scanned without any filter, so
  Spark's optimisations reach the files: ``count()`` reads no column, ``sum(length(value))``
  only ``value``. The other objects (range boundaries, transactional segments, manifests
  without counts) get ``offset`` bounds and ``NOT is_control`` (``NOT aborted`` under
  read_committed), which Spark pushes into the Parquet reader (row groups are skipped on their
  statistics). User filters on ``partition`` drop whole per-partition scans (the literal
  folds) and prune the shared scan's files before they are opened (a partition filter, or one
  on file metadata only: the scan's ``numFiles`` metric shows it); those on ``offset`` and
  ``timestamp`` are pushed into every scan.
- Hot pieces: with a ``local`` master and a small hot tail, read on the driver once and
  written as Parquet files in the tier's columns (:mod:`.hot_tail`: a Python data source query
  costs more than Spark's whole scan of the tier), which are planned like filter-free tier
  objects of their partitions: in the topic's shared scan when sizes or names keep the ``CASE``
  unambiguous (no second relation, no union: on a 2-core machine a second relation cost a
  first read's ``count()`` ~0.06 s, as much as reading the tail), else in the partition's
  scan; otherwise read by the ``sparklog`` Python data source, handed the
  planned pieces in the internal option :data:`HOT_PIECES_OPTION` (no second plan, same ends).
  The parts are combined with a positional ``union`` (same columns, same order); each part
  already has Spark's schema, every column nullable (the scans' literals are wrapped so), so
  the result's schema equals the data source's whatever the parts. Projections are SQL
  strings: planning a read costs a few py4j round trips per scan, not one per column function
  (with about 900 calls per read, the plan took longer than a whole ``count()`` of 2M tiered
  rows).
- The store must be readable by Spark's Hadoop file systems: ``file://``, ``hdfs://``,
  ``gs://``..., and ``s3://`` read as ``s3a://`` (the ``sparklog.store.s3.*`` endpoint and keys
  become the scans' ``fs.s3a.*`` options) when hadoop-aws is on the classpath. Otherwise
  (``memory://``, S3 without hadoop-aws) the whole read falls back to ``format("sparklog")``.
- ``failOnDataLoss=false`` sets the Parquet scans' ``ignoreMissingFiles`` (an object deleted
  by retention after planning is skipped); with true Spark fails the query on it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .local_layout import local_path, partition_layout
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
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession

__all__ = ["HOT_PIECES_OPTION", "SparklogBatchRead", "read"]

#: Internal option: the hot pieces a native plan already planned, as JSON.
HOT_PIECES_OPTION: Final = "sparklog.internal.hotPieces"

#: The tier's columns the scans read (a given schema: Spark reads no footer to plan).
_TIER_SCHEMA: Final = (
    "offset BIGINT, timestamp BIGINT, timestamp_type TINYINT, key BINARY, value BINARY,"
    " headers ARRAY<STRUCT<key: STRING, value: BINARY>>, is_control BOOLEAN, aborted BOOLEAN"
)
#: Most objects one scan over several partitions names in its ``partition`` CASE.
_MAX_CASE_OBJECTS: Final = 256
#: File names :func:`_partition_case` may compare (Spark's ``file_name`` is then the path's).
_PLAIN_NAME: Final = re.compile(r"[A-Za-z0-9._-]+")
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
    if hot:
        from .hot_tail import materialise

        tails = materialise(hot, _local_master(spark))
        if tails is not None:
            # Scanned with the tier's objects: every tail row is wanted (filter-free).
            for tail in tails:
                cold[(tail.topic, tail.partition)].append(
                    ColdObject(f"file://{tail.path}", tail.start, tail.end, tail.size_bytes, True)
                )
            hot = []
    frames = []
    if cold:
        # One reader for every scan: its schema and options cross to the JVM once.
        reader = spark.read.schema(_TIER_SCHEMA).options(**_hadoop_options(options))
        layout_reader = None
        if _local_master(spark):
            layout_reader = spark.read.schema(f"{_TIER_SCHEMA}, partition INT").options(
                **_hadoop_options(options)
            )
        for topic in sorted({t for t, _ in cold}):
            by_partition = {p: objects for (t, p), objects in sorted(cold.items()) if t == topic}
            frames.extend(
                _topic_frames(reader, layout_reader, options, base_url, topic, by_partition)
            )
    if hot:
        frames.append(_hot_frame(spark, raw, options, hot))
    if not frames:
        return _empty(spark, options.include_headers)
    result = frames[0]
    for frame in frames[1:]:
        # Every part has the same columns in the same order (by construction): a positional
        # union, one call per part (Spark analyses each step, so fewer steps plan faster).
        result = result.union(frame)
    return result


def _hot_frame(
    spark: SparkSession, raw: Mapping[str, str], options: SourceOptions, hot: list[HotPiece]
) -> DataFrame:
    """The hot pieces the driver declined to materialise, read by the data source in tasks."""
    split = split_pieces(list(hot), options.max_records_per_partition, options.min_partitions)
    hot_json = hot_pieces_to_json(p for p in split if isinstance(p, HotPiece))
    frame: DataFrame = _source(spark, {**raw, HOT_PIECES_OPTION: hot_json}).load()
    return frame


def _url(base_url: str | None, obj: ColdObject) -> str:
    """Where Spark reads ``obj``: a tier object's path is relative to the store, a hot tail
    file's (:mod:`.hot_tail`) is a ``file://`` URL already."""
    if "://" in obj.path:
        return obj.path
    assert base_url is not None
    return f"{base_url}/{obj.path}"


def _local_master(spark: SparkSession) -> bool:
    """Whether executors see the driver's files (Spark runs in this process: ``local``)."""
    try:
        return str(spark.conf.get("spark.master", "")).startswith("local")
    except Exception:  # Spark Connect may refuse the key: assume a cluster
        return False


def _empty(spark: SparkSession, include_headers: bool) -> DataFrame:
    """An empty frame of exactly the Kafka source schema (every column nullable)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(spark_ddl(include_headers))
    assert isinstance(schema, StructType)
    return spark.createDataFrame([], schema)


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _kafka_exprs(topic: str, partition: str, include_headers: bool) -> list[str]:
    """The Kafka source's columns over a tier scan, as SQL (one ``selectExpr`` call instead of a
    py4j round trip per column function). Spark's schema has every column nullable: file
    columns are (a given read schema is made nullable), ``partition`` is a ``CASE`` (nullable: its
    ``ELSE`` raises) or a literal wrapped in an ``IF`` whose other branch is null (the
    optimizer folds it back to the literal), and so is ``topic``."""
    exprs = [
        "key",
        "value",
        f"IF(true, {_sql_string(topic)}, NULL) AS topic",
        f"{partition} AS partition",
        "offset",
        "timestamp_millis(timestamp) AS timestamp",
        "CAST(timestamp_type AS INT) AS timestampType",
    ]
    if include_headers:
        headers_type = HEADERS_DDL.split(" ", 1)[1]
        exprs.append(f"CAST(headers AS {headers_type}) AS headers")
    return exprs


def _partition_case(free: Mapping[int, Sequence[ColdObject]]) -> str | None:
    """``partition`` of a row of a scan over several partitions' objects, as SQL over the
    file's constant metadata, or None when it cannot tell the partitions apart or there are too
    many objects for one ``CASE``. Spark fills ``_metadata.file_size`` and ``file_name`` per file
    without reading anything, and a filter on them prunes files before they are opened.

    A file is named by its size (an integer compare per row) when no other partition's object
    has that size; objects whose sizes collide across partitions (equal-sized hot tails of
    evenly produced partitions, say) by their file name, which must then be unique among them
    and plain (``[A-Za-z0-9._-]``: Spark's name of the file is then the path's last part). A
    file matching neither fails the query rather than giving a wrong partition (a size that
    differs from the manifest's, for one)."""
    sizes: dict[int, set[int]] = defaultdict(set)
    for partition, objects in free.items():
        for obj in objects:
            sizes[obj.size_bytes].add(partition)
    by_size: dict[int, int] = {}
    by_name: dict[str, int] = {}
    for partition, objects in free.items():
        for obj in objects:
            if obj.size_bytes > 0 and len(sizes[obj.size_bytes]) == 1:
                by_size[obj.size_bytes] = partition
                continue
            name = obj.path.rsplit("/", 1)[-1]
            if not _PLAIN_NAME.fullmatch(name) or by_name.setdefault(name, partition) != partition:
                return None
    if len(by_size) + len(by_name) > _MAX_CASE_OBJECTS or len(free) < 2:
        return None
    error = _sql_string("sparklog: a tier object's size differs from its manifest entry")
    fallback = f"raise_error({error})"
    if by_name:
        names = " ".join(f"WHEN {_sql_string(n)} THEN {p}" for n, p in by_name.items())
        fallback = f"CASE _metadata.file_name {names} ELSE {fallback} END"
    if not by_size:
        return fallback
    branches = " ".join(f"WHEN {size} THEN {partition}" for size, partition in by_size.items())
    return f"CASE _metadata.file_size {branches} ELSE {fallback} END"


def _topic_frames(
    reader: DataFrameReader,
    layout_reader: DataFrameReader | None,
    options: SourceOptions,
    base_url: str | None,
    topic: str,
    by_partition: Mapping[int, Sequence[ColdObject]],
) -> list[DataFrame]:
    """One topic's scans: the filter-free objects of all its partitions in one scan (one scan
    costs Spark far less than one per partition: a ``count()`` of 4 partitions took twice
    parquet's CPU), its ``partition`` from ``partition=N`` directories of links when the files
    are local and ``layout_reader`` is given (a local master: :mod:`.local_layout`), else from
    :func:`_partition_case`, else one scan per partition; the objects that need a filter, one
    scan per partition."""
    free = {p: [o for o in objects if o.filter_free] for p, objects in by_partition.items()}
    free = {p: objects for p, objects in free.items() if objects}
    frames = []
    shared = False
    if layout_reader is not None and len(free) >= 2:
        local = {p: [local_path(_url(base_url, o)) for o in objects] for p, objects in free.items()}
        if all(path is not None for paths in local.values() for path in paths):
            base, _ = partition_layout(
                {p: [path for path in paths if path is not None] for p, paths in local.items()}
            )
            # The directory, not its files: Spark lists more than 32 paths
            # (spark.sql.sources.parallelPartitionDiscovery.threshold) with a Spark job.
            scan = layout_reader.option("basePath", base).parquet(base)
            frames.append(
                scan.selectExpr(*_kafka_exprs(topic, "partition", options.include_headers))
            )
            shared = True
    if not shared and (case := _partition_case(free)) is not None:
        exprs = _kafka_exprs(topic, case, options.include_headers)
        paths = [_url(base_url, o) for objects in free.values() for o in objects]
        frames.append(reader.parquet(*paths).selectExpr(*exprs))
        shared = True
    for partition, objects in by_partition.items():
        wanted = [o for o in objects if not (shared and o.filter_free)]
        frames.extend(_cold_frames(reader, options, base_url, topic, partition, wanted))
    return frames


def _cold_frames(
    reader: DataFrameReader,
    options: SourceOptions,
    base_url: str | None,
    topic: str,
    partition: int,
    objects: Sequence[ColdObject],
) -> list[DataFrame]:
    frames = []
    free = [o for o in objects if o.filter_free]
    boundary = [o for o in objects if not o.filter_free]
    exprs = _kafka_exprs(topic, f"IF(true, {int(partition)}, NULL)", options.include_headers)
    for group, filtered in ((free, False), (boundary, True)):
        if not group:
            continue
        scan = reader.parquet(*[_url(base_url, o) for o in group])
        if filtered:
            keep = (
                f"offset >= {min(o.start for o in group)}"
                f" AND offset < {max(o.end for o in group)}"
                " AND NOT coalesce(is_control, false)"
            )
            if options.read_committed:
                keep += " AND NOT coalesce(aborted, false)"
            scan = scan.where(keep)
        frames.append(scan.selectExpr(*exprs))
    return frames
