"""Tiered storage (imported as ``sparklog.tiering``): KIP-405 RemoteStorageManager and
RemoteLogMetadataManager on fsspec, with closed segments transcoded to Parquet.

Not built yet: see the tiered-storage issue.
"""
