#!/usr/bin/env bash
# kafka-topics.sh for librdkafka's test_kafka_topics(): sparklog's own kafka-topics.sh
# (`sparklog topics`), so the suite's tests that alter or delete topics with Kafka's tool run.
here="$(cd "$(dirname "$0")/../../../.." && pwd)"
exec "${SPARKLOG_PYTHON:-$here/.venv/bin/python}" -m sparklog.cli.main topics "$@"
