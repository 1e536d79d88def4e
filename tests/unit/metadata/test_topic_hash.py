"""KIP-1101 topic and group metadata hashes (Kafka 4.2's computeTopicHash/computeGroupHash): the
byte stream they hash, and which metadata changes move them."""

from __future__ import annotations

import struct

import xxhash

from sparklog.metadata.image import (
    BrokerRegistration,
    ClusterImage,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from sparklog.metadata.topic_hash import group_hash, subscription_hash, topic_hash

TOPIC_ID = bytes(range(1, 17))


def image(
    partitions: int = 2,
    racks: dict[int, str | None] | None = None,
    topic_id: bytes = TOPIC_ID,
    replicas: tuple[int, ...] = (1, 2),
) -> MetadataImage:
    racks = {1: "r1", 2: "r0"} if racks is None else racks
    brokers = {
        b: BrokerRegistration(b, 1, b"\x00" * 16, (), rack=rack) for b, rack in racks.items()
    }
    parts = {i: PartitionRegistration(replicas, replicas, 1, 0, 0) for i in range(partitions)}
    topic = TopicImage("t", topic_id, parts)
    return MetadataImage(
        cluster=ClusterImage(brokers),
        topics=TopicsImage(by_id={topic_id: topic}, by_name={"t": topic}),
    )


def signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def test_topic_hash_is_xxh3_of_hash4j_stream() -> None:
    """magic 0, id halves, name (UTF-16LE + length), count, then per partition its index and
    its replicas' racks sorted, each as length + string; little-endian as hash4j writes."""
    le_int, le_long = struct.Struct("<i").pack, struct.Struct("<q").pack
    most, least = struct.unpack(">qq", TOPIC_ID)

    def string(s: str) -> bytes:
        return s.encode("utf-16-le") + le_int(len(s))

    racks = le_int(2) + string("r0") + le_int(2) + string("r1")
    stream = (
        b"\x00" + le_long(most) + le_long(least) + string("t") + le_int(2)
        + le_int(0) + racks + le_int(1) + racks
    )  # fmt: skip
    assert topic_hash(image(), "t") == signed(xxhash.xxh3_64_intdigest(stream))
    assert topic_hash(image(), "missing") == 0


def test_what_moves_the_hash() -> None:
    base = topic_hash(image(), "t")
    assert topic_hash(image(), "t") == base  # deterministic
    assert topic_hash(image(partitions=3), "t") != base  # a partition added
    assert topic_hash(image(topic_id=b"\x09" * 16), "t") != base  # the topic recreated
    assert topic_hash(image(racks={1: "r1", 2: "r2"}), "t") != base  # a rack changed
    # racks are sorted, so the replica order does not matter; brokers without a rack add nothing
    assert topic_hash(image(replicas=(2, 1)), "t") == base
    assert topic_hash(image(racks={1: None, 2: None}), "t") != base


def test_group_hash_orders_by_topic_name() -> None:
    assert group_hash({}) == 0
    assert group_hash({"a": 1, "b": 2}) == group_hash({"b": 2, "a": 1})
    assert group_hash({"a": 1, "b": 2}) != group_hash({"a": 2, "b": 1})
    stream = struct.pack("<qq", 1, 2)
    assert group_hash({"a": 1, "b": 2}) == signed(xxhash.xxh3_64_intdigest(stream))
    assert subscription_hash(image(), ["t", "t"]) == group_hash({"t": topic_hash(image(), "t")})
