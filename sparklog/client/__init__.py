"""A small Kafka protocol client used by the CLI, tests and the connector."""
