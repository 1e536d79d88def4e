"""LogConfig: Kafka names, defaults, parsing and error messages."""

from __future__ import annotations

import pytest

from sparklog.storage.config import CONFIG_DEFS, LONG_MAX, LogConfig


def test_defaults_match_kafka() -> None:
    c = LogConfig()
    assert c.segment_bytes == 1 << 30
    assert c.segment_ms == 7 * 24 * 3600 * 1000
    assert c.segment_index_bytes == 10 * 1024 * 1024
    assert c.index_interval_bytes == 4096
    assert c.retention_ms == 604800000
    assert c.retention_bytes == -1
    assert c.cleanup_policy == ("delete",)
    assert c.flush_messages == LONG_MAX and c.flush_ms == LONG_MAX
    assert c.max_message_bytes == 1048588
    assert c.message_timestamp_type == "CreateTime"
    assert c.file_delete_delay_ms == 60000
    assert c.min_insync_replicas == 1
    assert c.segment_size == 1 << 30


def test_table_lists_every_field_with_its_default() -> None:
    c = LogConfig()
    names = [d.name for d in CONFIG_DEFS]
    assert names == sorted(names)
    assert "retention.ms" in names and "internal.segment.bytes" not in names
    for d in CONFIG_DEFS:
        assert getattr(c, d.field_name) == d.default, d.name
        assert d.doc and d.type in {"int", "long", "double", "string", "list", "boolean"}


def test_from_props_parses_kafka_strings() -> None:
    c = LogConfig.from_props(
        {
            "retention.ms": "-1",
            "cleanup.policy": "compact, delete",
            "preallocate": "TRUE",
            "min.cleanable.dirty.ratio": "0.25",
            "message.timestamp.type": "LogAppendTime",
        }
    )
    assert c.retention_ms == -1
    assert c.cleanup_policy == ("compact", "delete")
    assert c.compact_enabled and c.delete_enabled
    assert c.preallocate is True
    assert c.min_cleanable_dirty_ratio == 0.25
    assert c.log_append_time
    assert c.overridden_keys == {
        "retention.ms",
        "cleanup.policy",
        "preallocate",
        "min.cleanable.dirty.ratio",
        "message.timestamp.type",
    }


def test_with_overrides_layers_on_top() -> None:
    base = LogConfig.from_props({"retention.ms": "1000"})
    c = base.with_overrides({"segment.ms": "5000"})
    assert c.retention_ms == 1000 and c.segment_ms == 5000
    assert base.segment_ms == 7 * 24 * 3600 * 1000


def test_round_trip_through_props() -> None:
    c = LogConfig.from_props({"cleanup.policy": "compact", "retention.bytes": "12345"})
    assert LogConfig.from_props(c.to_props()) == c
    assert c.value_string("cleanup.policy") == "compact"
    assert c.value_string("preallocate") == "false"


@pytest.mark.parametrize(
    ("props", "fragment"),
    [
        ({"retention.mss": "1"}, "Unknown topic config name: retention.mss"),
        ({"segment.bytes": "1000"}, "segment.bytes: Value must be at least 1048576"),
        ({"segment.bytes": "abc"}, "segment.bytes: expected a 32-bit integer"),
        ({"segment.bytes": "99999999999"}, "segment.bytes"),
        ({"cleanup.policy": "delete,forever"}, "must be one of compact, delete"),
        ({"preallocate": "yes"}, "preallocate"),
        ({"message.timestamp.type": "Now"}, "CreateTime, LogAppendTime"),
        ({"retention.ms": "-2"}, "retention.ms: Value must be at least -1"),
        ({"min.insync.replicas": "0"}, "min.insync.replicas"),
        ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict"),
        ({"compression.type": "brotli"}, "compression.type"),
    ],
)
def test_bad_values_name_the_key(props: dict[str, str], fragment: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        LogConfig.from_props(props)
    assert fragment in str(info.value)


def test_internal_segment_bytes_allows_small_segments() -> None:
    c = LogConfig.from_props({"internal.segment.bytes": "4096"})
    assert c.segment_size == 4096
    assert c.segment_bytes == 1 << 30
