"""sparklog: a Kafka-compatible log service whose storage is built for Spark."""

__version__ = "0.1.0"
