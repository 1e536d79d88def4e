"""Reading a tiered store with nothing but its URL: for Spark executors, the CLI and scripts.

:class:`TieredStoreReader` lists topics, partitions and manifests and reads records as Arrow
tables. It never writes. It reads only what a manifest names in state COPY_SEGMENT_FINISHED and
at or above the manifest's ``log_start_offset``, so copies in progress, orphans and segments
being deleted are invisible.

- ``read_records(topic, partition, start, end)`` returns the rows with ``start <= offset <
  end`` (half-open, as Spark's offset ranges), sorted by offset, with the Parquet schema of
  :mod:`sparklog.tiering.layout`. Control rows (transaction markers) are always dropped;
  ``read_committed=True`` also drops rows of aborted transactions.
- A topic name may have several topic ids (deleted and re-created). Without ``topic_id`` the
  reader uses the id whose partitions were copied to most recently and says so in
  ``topic_ids``.
- Errors: :class:`TopicNotFoundError` / :class:`PartitionNotFoundError` (``LookupError``s
  naming what exists), :class:`~sparklog.tiering.rsm.RemoteStorageError` for a store or object
  that cannot be read.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .layout import (
    PARQUET_SCHEMA,
    STORE_MARKER,
    TOPICS_DIR,
    LayoutError,
    Manifest,
    ManifestSegment,
    manifest_path,
    parse_store_marker,
    partition_dir,
)
from .rsm import RemoteStorageError
from .segment_reader import open_segment, read_rows
from .store import ObjectNotFoundError, ObjectStore, StoreError, open_store

__all__ = ["PartitionNotFoundError", "TieredStoreReader", "TopicNotFoundError"]


class TopicNotFoundError(LookupError):
    """The topic has no tiered data in this store."""


class PartitionNotFoundError(LookupError):
    """The partition has no manifest in this store."""


class TieredStoreReader:
    """With ``cache_manifests`` each manifest is read once for the reader's lifetime (a
    query planner's snapshot); otherwise every call reads the current manifest."""

    def __init__(self, store: ObjectStore, *, cache_manifests: bool = False) -> None:
        self._store = store
        self._manifests: dict[str, Manifest] | None = {} if cache_manifests else None

    @classmethod
    def open(
        cls, url: str, options: dict[str, Any] | None = None, *, cache_manifests: bool = False
    ) -> TieredStoreReader:
        return cls(open_store(url, options), cache_manifests=cache_manifests)

    @property
    def store(self) -> ObjectStore:
        return self._store

    def cluster_id(self) -> str | None:
        """The cluster recorded in ``_sparklog.json``; None for an empty store."""
        try:
            return parse_store_marker(self._store.read_bytes(STORE_MARKER))
        except ObjectNotFoundError:
            return None
        except (StoreError, LayoutError) as exc:
            raise RemoteStorageError(
                f"cannot read {self._store.url}/{STORE_MARKER}: {exc}"
            ) from exc

    def _list_dir(self, prefix: str) -> list[str]:
        try:
            return self._store.list_dir(prefix)
        except StoreError as exc:
            raise RemoteStorageError(str(exc)) from exc

    def list_topics(self) -> list[str]:
        """Topics with at least one partition manifest (a first copy in progress is not one)."""
        return [
            topic
            for topic in self._list_dir(TOPICS_DIR)
            if any(
                self._partitions_of(topic, topic_id)
                for topic_id in self._list_dir(f"{TOPICS_DIR}/{topic}")
            )
        ]

    def topic_ids(self, topic: str) -> list[str]:
        """The topic ids stored under ``topic``, the one the reader uses by default first."""
        ids = [i for i in self._list_dir(f"{TOPICS_DIR}/{topic}") if self._partitions_of(topic, i)]
        if not ids:
            raise TopicNotFoundError(
                f"topic {topic!r} has no tiered data in {self._store.url}"
                f" (topics there: {', '.join(self.list_topics()) or 'none'})"
            )
        if len(ids) == 1:
            return ids

        def latest_copy(topic_id: str) -> int:
            newest = -1
            for partition in self._partitions_of(topic, topic_id):
                manifest = self._manifest(topic, topic_id, partition)
                newest = max([newest] + [s.copied_ms for s in manifest.segments])
            return newest

        return sorted(ids, key=latest_copy, reverse=True)

    def _partitions_of(self, topic: str, topic_id: str) -> list[int]:
        """Partitions of ``topic_id`` that have a manifest."""
        names = self._list_dir(f"{TOPICS_DIR}/{topic}/{topic_id}")
        try:
            return sorted(
                int(n)
                for n in names
                if n.isdigit() and self._store.exists(manifest_path(topic, topic_id, int(n)))
            )
        except (StoreError, ValueError) as exc:
            raise RemoteStorageError(f"cannot list {topic} in {self._store.url}: {exc}") from exc

    def list_partitions(self, topic: str, topic_id: str | None = None) -> list[int]:
        return self._partitions_of(topic, topic_id or self.topic_ids(topic)[0])

    def _manifest(self, topic: str, topic_id: str, partition: int) -> Manifest:
        path = manifest_path(topic, topic_id, partition)
        if self._manifests is not None and path in self._manifests:
            return self._manifests[path]
        try:
            manifest = Manifest.from_bytes(self._store.read_bytes(path))
        except ObjectNotFoundError:
            raise PartitionNotFoundError(
                f"{topic}-{partition} has no manifest in {self._store.url}"
                f" (partitions there: {self._partitions_of(topic, topic_id) or 'none'})"
            ) from None
        except (StoreError, LayoutError) as exc:
            raise RemoteStorageError(f"cannot read {self._store.url}/{path}: {exc}") from exc
        if self._manifests is not None:
            self._manifests[path] = manifest
        return manifest

    def read_manifest(self, topic: str, partition: int, topic_id: str | None = None) -> Manifest:
        return self._manifest(topic, topic_id or self.topic_ids(topic)[0], partition)

    def segments_for_range(
        self, manifest: Manifest, start: int, end: int | None
    ) -> list[ManifestSegment]:
        """The readable segments holding offsets in ``[start, end)``."""
        start = max(start, manifest.log_start_offset)
        return [
            s
            for s in manifest.finished_segments
            if s.end_offset >= start and (end is None or s.base_offset < end)
        ]

    def read_records(
        self,
        topic: str,
        partition: int,
        start: int = 0,
        end: int | None = None,
        *,
        read_committed: bool = False,
        topic_id: str | None = None,
        columns: list[str] | None = None,
    ) -> pa.Table:
        """Rows with ``start <= offset < end`` (``end`` None: all tiered rows)."""
        manifest = self.read_manifest(topic, partition, topic_id)
        low = max(start, manifest.log_start_offset)
        base = partition_dir(manifest.topic, manifest.topic_id, manifest.partition)
        tables = [
            self._read_segment(f"{base}/{segment.path}", low, end, read_committed)
            for segment in self.segments_for_range(manifest, low, end)
        ]
        table = pa.concat_tables(tables) if tables else PARQUET_SCHEMA.empty_table()
        return table.select(columns) if columns is not None else table

    def _read_segment(
        self, path: str, start: int, end: int | None, read_committed: bool
    ) -> pa.Table:
        try:
            with open_segment(self._store, path) as parquet:
                tables = list(read_rows(parquet, start, end, read_committed=read_committed))
        except StoreError as exc:
            raise RemoteStorageError(f"cannot read a tiered segment: {exc}") from exc
        except Exception as exc:
            raise RemoteStorageError(
                f"cannot read {self._store.url}/{path}: {type(exc).__name__}: {exc}"
            ) from exc
        if not tables:
            return PARQUET_SCHEMA.empty_table()
        # The objects' schema is the layout's; cast what an older writer may have annotated.
        return pa.concat_tables(
            [t if t.schema.equals(PARQUET_SCHEMA) else t.cast(PARQUET_SCHEMA) for t in tables]
        )
