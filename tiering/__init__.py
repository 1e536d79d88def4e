"""Tiered storage (imported as ``sparklog.tiering``): KIP-405 RemoteStorageManager and
RemoteLogMetadataManager on fsspec, with closed segments transcoded to Parquet.

Modules: ``layout`` (THE store layout contract: paths, manifest, Parquet schema), ``store``
(the object-store seam), ``transcode`` (segment <-> Parquet), ``batch_decode`` (the
vectorised record decoder, shared with the Spark connector, with ``region_arrays`` building its
Arrow arrays), ``batch_encode`` (its inverse for remote fetch), ``fetch_cursor`` (sequential
remote fetches resume their encoder), ``metadata`` (KIP-405 value objects), ``rsm`` / ``rlmm``
(the two managers), ``segment_reader`` (THE reader of segment objects: row groups by
statistics, range reads, offset-for-timestamp; the broker, the connector and ``reader`` use
it), ``reader`` (URL-only reads for Spark, the CLI and scripts), ``config`` (configuration
keys).
Everything here is blocking: brokers call it from worker threads. Importing this package does
not import pyarrow; its modules do.
"""
