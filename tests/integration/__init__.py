"""Integration tests: real sparklog processes driven by real Kafka clients over sockets."""
