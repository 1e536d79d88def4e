"""The producer's partitioning is Kafka's: murmur2 against Kafka's own test vectors and against
kafka-python's independent implementation; keyed records land where murmur2 says; null keys
stick to a partition and move on round-robin; config errors name the setting."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.client.producer import ProducerConfig, default_partition, murmur2

# Apache Kafka's UtilsTest.testMurmur2 vectors.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), sorted(KAFKA_VECTORS.items()))
def test_murmur2_matches_kafka_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    from kafka.partitioner.default import murmur2 as reference

    assert murmur2(data) & 0xFFFFFFFF == reference(data)
    assert -(1 << 31) <= murmur2(data) < (1 << 31)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=32), st.integers(min_value=1, max_value=64))
def test_default_partition_is_positive_murmur_modulo(key: bytes, partitions: int) -> None:
    from kafka.partitioner.default import murmur2 as reference

    chosen = default_partition(key, partitions)
    assert 0 <= chosen < partitions
    assert chosen == (reference(key) & 0x7FFFFFFF) % partitions


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"acks": 0}, "acks"),
        ({"compression": "brotli"}, "compression.type"),
        ({"batch_size": 0}, "batch.size"),
        ({"retries": -1}, "retries"),
    ],
)
def test_bad_config_names_the_setting(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ProducerConfig(**kwargs)  # type: ignore[arg-type]
