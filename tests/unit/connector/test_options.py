"""Every source option's parsing, effect on :class:`SourceOptions` and error message (no Spark,
no broker): Spark's Kafka source names, precedence and messages."""

from __future__ import annotations

import contextlib
import json
import logging
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.connector.options import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    OptionError,
    SourceOptions,
    parse_options,
    parse_time_ms,
)

BASE = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "t"}


def _merged(options: dict[str, str | None]) -> dict[str, str]:
    merged = {**BASE, **options}
    return {k: v for k, v in merged.items() if v is not None}


def parse(**options: str | None) -> SourceOptions:
    return parse_options(_merged(options))


def parse_stream(**options: str | None) -> SourceOptions:
    return parse_options(_merged(options), streaming=True)


def fails(message: str, **options: str | None) -> str:
    with pytest.raises(OptionError) as info:
        parse(**options)
    assert message in str(info.value), str(info.value)
    return str(info.value)


def fails_stream(message: str, **options: str | None) -> None:
    with pytest.raises(OptionError) as info:
        parse_stream(**options)
    assert message in str(info.value), str(info.value)


# --- defaults and the subscription strategy ----------------------------------------------------


def test_batch_defaults() -> None:
    opts = parse()
    assert opts.subscribe == ("t",) and opts.subscribe_pattern is None and opts.assign is None
    assert opts.starting == OffsetSpec(EARLIEST) and opts.ending == OffsetSpec(LATEST)
    assert not opts.read_committed and not opts.include_headers and opts.fail_on_data_loss
    assert opts.min_partitions is None and opts.max_records_per_partition is None
    assert opts.no_match_strategy == "error" and opts.max_trigger_delay_ms == 15 * 60_000
    assert opts.fetch_offset_num_retries == 3 and opts.fetch_offset_retry_interval_ms == 1000
    assert opts.poll_timeout_ms == 120_000 and not opts.streaming


def test_streaming_defaults_start_at_latest() -> None:
    opts = parse_stream()
    assert opts.streaming and opts.starting == OffsetSpec(LATEST)
    assert parse_stream(startingOffsets="latest").starting == OffsetSpec(LATEST)
    assert parse_stream(startingOffsets='{"t":{"0":-1}}').starting.lookup() == {("t", 0): LATEST}


def test_keys_are_case_insensitive() -> None:
    opts = parse_options(
        {"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubScribe": "a, b ,", "INCLUDEHEADERS": "TRUE"}
    )
    assert opts.subscribe == ("a", "b") and opts.include_headers


def test_subscribe_pattern_and_assign() -> None:
    opts = parse(subscribe=None, subscribePattern=" topic-.* ")
    assert opts.subscribe_pattern == "topic-.*"
    opts = parse(subscribe=None, assign='{"b":[1,0],"a":[0]}')
    assert opts.assign == (("a", 0), ("b", 0), ("b", 1))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"subscribe": None},
            "One of the following options must be specified for Kafka source: subscribe,"
            " subscribepattern, assign. See the docs for more details.",
        ),
        (
            {"assign": '{"t":[0]}'},
            "Only one of the following options can be specified for Kafka source",
        ),
        ({"subscribePattern": "x"}, "Only one of the following options can be specified"),
        (
            {"subscribe": " , "},
            "No topics to subscribe to as specified value for option 'subscribe' is ' , '",
        ),
        (
            {"subscribe": None, "subscribePattern": "  "},
            "Pattern to subscribe is empty as specified value for option 'subscribePattern'",
        ),
        ({"subscribe": None, "subscribePattern": "(("}, "option 'subscribePattern'"),
        (
            {"subscribe": None, "assign": "t:0"},
            "No topicpartitions to assign as specified value for option 'assign' is 't:0'",
        ),
        ({"subscribe": None, "assign": '{"t":0}'}, 'Expected e.g. {"topicA":[0,1]'),
        ({"subscribe": None, "assign": '{"t":[]}'}, "No topicpartitions to assign"),
        ({"subscribe": None, "assign": "{bad"}, "option 'assign'"),
    ],
)
def test_strategy_errors(options: dict[str, str | None], message: str) -> None:
    fails(message, **options)


def test_bootstrap_servers_required_unless_store_only() -> None:
    fails(
        "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer",
        **{"kafka.bootstrap.servers": None},
    )
    opts = parse(
        **{
            "kafka.bootstrap.servers": None,
            "sparklog.read.from": "store",
            "sparklog.store.url": "file:///x",
        }
    )
    assert not opts.uses_brokers and opts.uses_store and opts.bootstrap_servers is None


# --- starting / ending offsets and timestamps ----------------------------------------------------


def test_json_offsets() -> None:
    opts = parse(startingOffsets='{"t":{"0":5,"1":-2}}', endingOffsets='{"t":{"0":-1,"1":9}}')
    assert opts.starting.lookup() == {("t", 0): 5, ("t", 1): EARLIEST}
    assert opts.ending.lookup() == {("t", 0): LATEST, ("t", 1): 9}
    assert opts.starting.specified_partitions() == {("t", 0), ("t", 1)}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"startingOffsets": "latest"},
            "starting offset can't be latest for batch queries on Kafka",
        ),
        (
            {"startingOffsets": '{"t":{"0":-1}}'},
            "startingOffsets for t-0 can't be latest for batch queries on Kafka",
        ),
        (
            {"endingOffsets": "earliest"},
            "ending offset can't be earliest for batch queries on Kafka",
        ),
        (
            {"endingOffsets": '{"t":{"3":-2}}'},
            "ending offset for t-3 can't be earliest for batch queries on Kafka",
        ),
        ({"startingOffsets": "{bad"}, "(option 'startingOffsets')"),
        ({"startingOffsets": "soon"}, "(option 'startingOffsets')"),
        ({"endingOffsets": '{"t":{"0":"x"}}'}, "(option 'endingOffsets')"),
        ({"endingOffsets": '{"t":{"zero":1}}'}, "(option 'endingOffsets')"),
        ({"startingOffsets": '{"t":{"0":-7}}'}, "option 'startingOffsets'"),
        ({"startingOffsets": "{}"}, "Option 'startingOffsets' names no partition"),
        (
            {"startingOffsets": '{"t":{"0":1}}', "endingOffsets": '{"t":{"1":5}}'},
            "The specified start offset and end offset should have the same topic-partitions.",
        ),
        (
            {"startingOffsets": '{"t":{"0":9}}', "endingOffsets": '{"t":{"0":5}}'},
            "The specified start offset 9 is greater than the end offset 5 for topic t"
            " partition 0.",
        ),
    ],
)
def test_offset_errors(options: dict[str, str], message: str) -> None:
    fails(message, **options)


def test_spark_offsets_message_for_bad_json() -> None:
    text = fails("Expected e.g.", startingOffsets="{bad")
    assert text.startswith('Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {bad')


def test_starting_timestamp_takes_precedence() -> None:
    opts = parse(
        startingTimestamp="1000",
        startingOffsetsByTimestamp='{"t":{"0":5}}',
        startingOffsets="earliest",
    )
    assert opts.starting.by_timestamp and opts.starting.timestamp_ms == 1000
    assert opts.starting.default is None and opts.starting.specified_partitions() is None


def test_by_timestamp_takes_precedence_over_offsets() -> None:
    opts = parse(
        startingOffsetsByTimestamp='{"t":{"0":5,"1":7}}',
        startingOffsets="earliest",
        endingOffsetsByTimestamp='{"t":{"0":50,"1":70}}',
        endingOffsets="latest",
    )
    assert opts.starting.timestamp_lookup() == {("t", 0): 5, ("t", 1): 7}
    assert opts.ending.timestamp_lookup() == {("t", 0): 50, ("t", 1): 70}
    assert opts.ending.specified_partitions() == {("t", 0), ("t", 1)}


def test_ending_timestamp() -> None:
    opts = parse(endingTimestamp=" 99 ", endingOffsets="latest")
    assert opts.ending.timestamp_ms == 99 and opts.ending.default is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"startingTimestamp": "yesterday"}, "Expected a single long value, got yesterday"),
        ({"startingTimestamp": "yesterday"}, "option 'startingTimestamp'"),
        ({"endingTimestamp": "1.5"}, "option 'endingTimestamp'"),
        ({"startingTimestamp": "-5"}, "option 'startingTimestamp'"),
        ({"startingOffsetsByTimestamp": "[1]"}, "(option 'startingOffsetsByTimestamp')"),
        ({"endingOffsetsByTimestamp": '{"t":{"0":-1}}'}, "option 'endingOffsetsByTimestamp'"),
        (
            {
                "startingOffsetsByTimestamp": '{"t":{"0":10}}',
                "endingOffsetsByTimestamp": '{"t":{"0":5}}',
            },
            "The specified start timestamp 10 is greater than the end timestamp 5",
        ),
        (
            {"startingOffsetsByTimestampStrategy": "closest"},
            "option 'startingOffsetsByTimestampStrategy', must be error or latest",
        ),
    ],
)
def test_timestamp_errors(options: dict[str, str], message: str) -> None:
    fails(message, **options)


def test_no_match_strategy() -> None:
    assert parse(startingOffsetsByTimestampStrategy="LATEST").no_match_strategy == "latest"
    assert parse(startingOffsetsByTimestampStrategy="error").no_match_strategy == "error"


def test_ending_options_are_not_valid_in_streams() -> None:
    fails_stream("ending offset not valid in streaming queries", endingOffsets="latest")
    fails_stream(
        "ending timestamp not valid in streaming queries",
        endingOffsetsByTimestamp='{"t":{"0":1}}',
    )
    fails_stream("ending timestamp not valid in streaming queries", endingTimestamp="1")


# --- numbers, booleans, isolation, our own options ---------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"minPartitions": "0"}, "minPartitions must be positive"),
        ({"minPartitions": "two"}, "option 'minPartitions'"),
        ({"maxRecordsPerPartition": "-1"}, "maxRecordsPerPartition must be positive"),
        ({"maxRecordsPerPartition": "x"}, "option 'maxRecordsPerPartition'"),
        ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger must be positive"),
        ({"maxOffsetsPerTrigger": "lots"}, "option 'maxOffsetsPerTrigger'"),
        ({"minOffsetsPerTrigger": "1e3"}, "option 'minOffsetsPerTrigger'"),
        (
            {"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
            "The value of minOffsetPerTrigger(10) is higher than the maxOffsetsPerTrigger(5).",
        ),
        ({"maxTriggerDelay": "soon"}, "option 'maxTriggerDelay'"),
        ({"maxTriggerDelay": "5 parsecs"}, "option 'maxTriggerDelay'"),
        ({"failOnDataLoss": "yes"}, "option 'failOnDataLoss', must be true or false"),
        ({"includeHeaders": "maybe"}, "option 'includeHeaders', must be true or false"),
        ({"kafka.isolation.level": "dirty"}, "option 'kafka.isolation.level'"),
        ({"sparklog.read.from": "tape"}, "option 'sparklog.read.from'"),
        ({"sparklog.hot.protocol": "carrier-pigeon"}, "option 'sparklog.hot.protocol'"),
        ({"sparklog.read.from": "store"}, "'sparklog.store.url' must be specified"),
        ({"fetchOffset.numRetries": "0"}, "fetchOffset.numRetries must be positive"),
        ({"fetchOffset.retryIntervalMs": "-1"}, "option 'fetchOffset.retryIntervalMs'"),
        ({"kafkaConsumer.pollTimeoutMs": "x"}, "option 'kafkaConsumer.pollTimeoutMs'"),
    ],
)
def test_bad_values_name_the_option(options: dict[str, str], message: str) -> None:
    fails(message, **options)


def test_values_parsed() -> None:
    opts = parse(
        minPartitions="8",
        maxRecordsPerPartition="1000",
        failOnDataLoss="False",
        includeHeaders="true",
        **{"kafka.isolation.level": "READ_COMMITTED"},
    )
    assert opts.min_partitions == 8 and opts.max_records_per_partition == 1000
    assert not opts.fail_on_data_loss and opts.include_headers and opts.read_committed


def test_admission_control_options() -> None:
    opts = parse_stream(
        maxOffsetsPerTrigger="300",
        minOffsetsPerTrigger="100",
        maxTriggerDelay="30s",
    )
    assert opts.max_offsets_per_trigger == 300 and opts.min_offsets_per_trigger == 100
    assert opts.max_trigger_delay_ms == 30_000


def test_byte_limit_and_group_progress_options() -> None:
    opts = parse_stream(
        maxBytesPerTrigger="1048576",
        maxOffsetsPerTrigger="10",
        **{"sparklog.commitOffsetsToGroup": "lag-view"},
    )
    assert opts.max_bytes_per_trigger == 1 << 20 and opts.max_offsets_per_trigger == 10
    assert opts.commit_offsets_to_group == "lag-view"
    with pytest.raises(OptionError, match="maxBytesPerTrigger must be positive"):
        parse_stream(maxBytesPerTrigger="0")
    with pytest.raises(OptionError, match="commitOffsetsToGroup' needs the brokers"):
        parse_stream(
            **{
                "sparklog.commitOffsetsToGroup": "g",
                "sparklog.read.from": "store",
                "sparklog.store.url": "file:///x",
            }
        )


def test_trigger_options_ignored_in_batch_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sparklog.connector.options"):
        opts = parse(maxOffsetsPerTrigger="10", minOffsetsPerTrigger="5", maxTriggerDelay="1m")
    assert opts.max_offsets_per_trigger == 10  # parsed and validated all the same
    for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
        assert f"{name} option ignored in batch queries" in caplog.text


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("15m", 900_000),
        ("30s", 30_000),
        ("500ms", 500),
        ("2h", 7_200_000),
        ("1d", 86_400_000),
        ("250", 250),
        ("3min", 180_000),
        ("1500us", 1),
        (" 10S ", 10_000),
    ],
)
def test_time_strings(text: str, ms: int) -> None:
    assert parse_time_ms(text, "maxTriggerDelay") == ms


def test_store_options() -> None:
    opts = parse(
        **{
            "sparklog.store.url": "s3://b/p",
            "sparklog.store.s3.endpoint.url": "http://127.0.0.1:5000",
            "sparklog.store.s3.access.key.id": "id",
            "sparklog.store.s3.secret.access.key": "secret",
            "sparklog.store.s3.region": "eu-west-1",
            "sparklog.read.from": "BROKERS",
        }
    )
    assert opts.store_url == "s3://b/p" and opts.read_from == "brokers" and not opts.uses_store
    assert opts.hot_protocol == "grpc"
    assert parse(**{"sparklog.hot.protocol": "Kafka"}).hot_protocol == "kafka"
    assert opts.store_options == {
        "endpoint_url": "http://127.0.0.1:5000",
        "key": "id",
        "secret": "secret",
        "client_kwargs": {"region_name": "eu-west-1"},
    }


# --- kafka.* options --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("kafka.auto.offset.reset", "Kafka option 'auto.offset.reset' is not supported."),
        (
            "kafka.key.deserializer",
            "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte"
            " arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly"
            " deserialize the keys.",
        ),
        (
            "kafka.value.deserializer",
            "Kafka option 'value.deserializer' is not supported as values are deserialized as"
            " byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly"
            " deserialize the values.",
        ),
        ("kafka.enable.auto.commit", "Kafka option 'enable.auto.commit' is not supported"),
        ("kafka.interceptor.classes", "Kafka option 'interceptor.classes' is not supported"),
    ],
)
def test_rejected_kafka_options_have_sparks_messages(key: str, message: str) -> None:
    text = fails(message, **{key: "x"})
    if key == "kafka.auto.offset.reset":
        assert "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'" in text
    # Upper case is the same option.
    fails(message, **{key.upper(): "x"})


def test_group_id_is_accepted_with_sparks_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sparklog.connector.options"):
        opts = parse(groupIdPrefix="p", **{"kafka.group.id": "g"})
    assert opts.group_id == "g" and opts.group_id_prefix == "p"
    assert "Kafka option 'kafka.group.id' has been set on this query" in caplog.text
    assert "Option groupIdPrefix will be ignored" in caplog.text


def test_other_kafka_options_pass_through() -> None:
    opts = parse(**{"kafka.client.id": "me", "kafka.fetch.max.bytes": "100"})
    assert opts.kafka_params == {"client.id": "me", "fetch.max.bytes": "100"}


# --- properties -------------------------------------------------------------------------------

_partitions = st.dictionaries(
    st.text(alphabet="abcxyz-_.", min_size=1, max_size=8),
    st.dictionaries(st.integers(0, 50).map(str), st.integers(-2, 2**40), min_size=1, max_size=4),
    min_size=1,
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(_partitions)
def test_starting_offsets_json_round_trips(doc: dict[str, dict[str, int]]) -> None:
    has_latest = any(v == LATEST for parts in doc.values() for v in parts.values())
    if has_latest:
        with pytest.raises(OptionError, match=re.escape("can't be latest for batch queries")):
            parse(startingOffsets=json.dumps(doc))
        return
    spec = parse(startingOffsets=json.dumps(doc)).starting
    assert spec.lookup() == {(t, int(p)): v for t, parts in doc.items() for p, v in parts.items()}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=30), st.text(max_size=30), max_size=6))
def test_parse_never_raises_anything_but_option_error(extra: dict[str, str]) -> None:
    with contextlib.suppress(OptionError):
        parse_options({**BASE, **extra})
