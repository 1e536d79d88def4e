"""The PySpark data source `sparklog` (imported as ``sparklog.connector``).

Reads cold offset ranges straight from the tiered object store and hot ranges from brokers,
honouring the high watermark and the last stable offset. Not built yet: see the connector issue.
"""
