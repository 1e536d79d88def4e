"""Tiered-storage configuration: Kafka's keys where they exist, ``sparklog.remote.storage.*``
for what Kafka leaves to the RemoteStorageManager plugin.

Keys (declared in :data:`sparklog.config_keys.DEFS` with the one framework of
:mod:`sparklog.configdef`, so ``server.properties`` accepts them and one parser reads them):

- ``remote.log.storage.system.enable`` (false): Kafka's switch for tiered storage.
- ``remote.log.manager.task.interval.ms`` (30000): how often copy / expire tasks run.
- ``remote.log.manager.copier.thread.pool.size`` (10): segments of that many partitions are
  transcoded and uploaded at once (one partition copies one segment at a time, in order).
- ``remote.log.manager.expiration.thread.pool.size`` (10): remote deletes at once.
- ``remote.log.manager.thread.pool.size`` (2): follower work, i.e. reading a partition's
  remote state (leader-epoch entries, producer snapshot) when its fetch offset was tiered.
- ``remote.log.reader.threads`` (10): remote fetches served at once.
- ``sparklog.remote.storage.url``: the store root, any fsspec URL (``file:///path``,
  ``s3://bucket/prefix``). Default: ``file://`` + the first of ``log.dirs`` (absolute, without
  a trailing slash) + ``-remote``, e.g. ``/var/lib/sparklog`` -> ``file:///var/lib/sparklog-remote``:
  next to the data, not inside a directory the log manager owns.
- ``sparklog.remote.storage.s3.endpoint.url``: S3 endpoint override (MinIO, moto).
- ``sparklog.remote.storage.s3.access.key.id`` / ``...s3.secret.access.key``: credentials;
  unset means s3fs's usual chain (environment, ~/.aws, instance role).
- ``sparklog.remote.storage.s3.region``: S3 region.
- ``sparklog.remote.storage.parquet.row.group.rows`` (131072): rows per Parquet row group.
- ``sparklog.remote.storage.fetch.cache.bytes`` (0): rebuilt batch bytes of remote fetches
  kept in memory (LRU) for readers of the same range again (0: none kept).

Topic-level ``remote.storage.enable``, ``local.retention.*`` and ``retention.*`` are the
broker's business (per-topic LogConfig), not read here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparklog.config_keys import DEFS

if TYPE_CHECKING:
    from sparklog.config import ServerConfig

ENABLE = "remote.log.storage.system.enable"
TASK_INTERVAL_MS = "remote.log.manager.task.interval.ms"
STORAGE_URL = "sparklog.remote.storage.url"
S3_ENDPOINT_URL = "sparklog.remote.storage.s3.endpoint.url"
S3_ACCESS_KEY_ID = "sparklog.remote.storage.s3.access.key.id"
S3_SECRET_ACCESS_KEY = "sparklog.remote.storage.s3.secret.access.key"
S3_REGION = "sparklog.remote.storage.s3.region"
ROW_GROUP_ROWS = "sparklog.remote.storage.parquet.row.group.rows"
FETCH_CACHE_BYTES = "sparklog.remote.storage.fetch.cache.bytes"
COPIER_THREADS = "remote.log.manager.copier.thread.pool.size"
EXPIRATION_THREADS = "remote.log.manager.expiration.thread.pool.size"
FOLLOWER_THREADS = "remote.log.manager.thread.pool.size"
READER_THREADS = "remote.log.reader.threads"

KEYS = (
    ENABLE,
    TASK_INTERVAL_MS,
    STORAGE_URL,
    S3_ENDPOINT_URL,
    S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY,
    S3_REGION,
    ROW_GROUP_ROWS,
    FETCH_CACHE_BYTES,
    COPIER_THREADS,
    EXPIRATION_THREADS,
    FOLLOWER_THREADS,
    READER_THREADS,
)


def default_storage_url(log_dir: str) -> str:
    path = os.path.normpath(os.path.abspath(log_dir))
    return f"file://{path}-remote"


def s3_storage_options(
    endpoint_url: str | None = None,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
    region: str | None = None,
) -> dict[str, Any]:
    """fsspec/s3fs storage options for the given S3 settings (unset ones are left out)."""
    options: dict[str, Any] = {}
    if endpoint_url:
        options["endpoint_url"] = endpoint_url
    if access_key_id:
        options["key"] = access_key_id
    if secret_access_key:
        options["secret"] = secret_access_key
    if region:
        options["client_kwargs"] = {"region_name": region}
    return options


@dataclass(frozen=True, slots=True)
class TieringConfig:
    enabled: bool
    task_interval_ms: int
    storage_url: str
    s3_endpoint_url: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_region: str | None = None
    row_group_rows: int = 131072
    copier_threads: int = 10
    expiration_threads: int = 10
    follower_threads: int = 2
    reader_threads: int = 10
    fetch_cache_bytes: int = 0

    @classmethod
    def from_server_config(cls, config: ServerConfig) -> TieringConfig:
        return cls._from_values(config.get, config.log_dirs[0])

    @classmethod
    def from_props(cls, props: Mapping[str, str], log_dir: str | None = None) -> TieringConfig:
        """From raw properties (only the tiering keys are read; others are ignored).
        ``log_dir`` gives the default store URL when ``sparklog.remote.storage.url`` is unset."""
        values = {
            key: DEFS[key].parse(props[key]) if key in props else DEFS[key].default for key in KEYS
        }
        return cls._from_values(values.__getitem__, log_dir)

    @classmethod
    def _from_values(cls, get: Callable[[str], Any], log_dir: str | None) -> TieringConfig:
        url = get(STORAGE_URL)
        if not url:
            if log_dir is None:
                raise ValueError(f"{STORAGE_URL} is not set and no log directory was given")
            url = default_storage_url(log_dir)
        return cls(
            enabled=bool(get(ENABLE)),
            task_interval_ms=int(get(TASK_INTERVAL_MS)),
            storage_url=str(url),
            s3_endpoint_url=get(S3_ENDPOINT_URL),
            s3_access_key_id=get(S3_ACCESS_KEY_ID),
            s3_secret_access_key=get(S3_SECRET_ACCESS_KEY),
            s3_region=get(S3_REGION),
            row_group_rows=int(get(ROW_GROUP_ROWS)),
            copier_threads=int(get(COPIER_THREADS)),
            expiration_threads=int(get(EXPIRATION_THREADS)),
            follower_threads=int(get(FOLLOWER_THREADS)),
            reader_threads=int(get(READER_THREADS)),
            fetch_cache_bytes=int(get(FETCH_CACHE_BYTES)),
        )

    def storage_options(self) -> dict[str, Any]:
        """fsspec storage options for ``storage_url`` (S3 settings apply to s3:// URLs)."""
        if not self.storage_url.startswith(("s3://", "s3a://")):
            return {}
        return s3_storage_options(
            self.s3_endpoint_url, self.s3_access_key_id, self.s3_secret_access_key, self.s3_region
        )

    def __repr__(self) -> str:
        # Never print the secret key (configs end up in logs).
        secret = "***" if self.s3_secret_access_key else None
        return (
            f"TieringConfig(enabled={self.enabled}, task_interval_ms={self.task_interval_ms},"
            f" storage_url={self.storage_url!r}, s3_endpoint_url={self.s3_endpoint_url!r},"
            f" s3_access_key_id={self.s3_access_key_id!r}, s3_secret_access_key={secret!r},"
            f" s3_region={self.s3_region!r}, row_group_rows={self.row_group_rows},"
            f" copier_threads={self.copier_threads}, reader_threads={self.reader_threads})"
        )
