"""KIP-1101 metadata hashes of topics and of a group's subscribed topics, as Kafka 4.2's group
coordinator computes them (``org.apache.kafka.coordinator.group.Utils.computeTopicHash`` and
``computeGroupHash``), sans-IO.

A group stores the hash of its subscribed topics' metadata (the ``MetadataHash`` of its
``*GroupMetadataValue`` record); when the hash computed from the current metadata image differs,
the topics changed (created, deleted, recreated with a new id, partitions added, replicas moved
between racks) and the group's assignment is computed again.

Contract (streaming XXH3-64, seed 0, over little-endian values as hash4j's ``HashStream64``
writes them: ``putInt``/``putLong`` 4/8 bytes LE, ``putString(s)`` the UTF-16LE code units of
``s`` then ``putInt(len(s))`` in code units):

- :func:`topic_hash` of a topic the image does not have is 0; else the hash of the magic byte 0,
  the topic id's most then least significant 64 bits, the name, the partition count, then per
  partition ``0..n-1`` its index and, for each rack of its replicas' brokers in sorted order,
  the rack's length then the rack (brokers without a rack, or unknown, add nothing).
- :func:`group_hash` is 0 without topics; else the hash of the topic hashes in topic-name order.
- Results are Java ``long`` values (signed 64-bit), as they are stored in the records.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

import xxhash

from sparklog.metadata.image import MetadataImage

TOPIC_HASH_MAGIC_BYTE = 0
_INT = struct.Struct("<i")
_LONG = struct.Struct("<q")
_ID_HALVES = struct.Struct(">qq")


def _java_order(text: str) -> bytes:
    """Sort key of Java's ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _put_string(out: bytearray, text: str) -> None:
    units = text.encode("utf-16-le")
    out += units
    out += _INT.pack(len(units) // 2)


def topic_hash(image: MetadataImage, name: str) -> int:
    """The metadata hash of topic ``name`` in ``image`` (0 when it does not exist)."""
    topic = image.topics.by_name.get(name)
    if topic is None:
        return 0
    most, least = _ID_HALVES.unpack(bytes(topic.topic_id))
    out = bytearray([TOPIC_HASH_MAGIC_BYTE])
    out += _LONG.pack(most) + _LONG.pack(least)
    _put_string(out, topic.name)
    count = len(topic.partitions)
    out += _INT.pack(count)
    for index in range(count):
        out += _INT.pack(index)
        partition = topic.partitions.get(index)
        racks: list[str] = []
        for replica in partition.replicas if partition is not None else ():
            broker = image.cluster.broker(replica)
            if broker is not None and broker.rack is not None:
                racks.append(broker.rack)
        for rack in sorted(racks, key=_java_order):
            out += _INT.pack(len(rack.encode("utf-16-le")) // 2)
            _put_string(out, rack)
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """The metadata hash of a group whose subscribed topics have ``topic_hashes``."""
    if not topic_hashes:
        return 0
    out = b"".join(_LONG.pack(topic_hashes[name]) for name in sorted(topic_hashes, key=_java_order))
    return _signed(xxhash.xxh3_64_intdigest(out))


def subscription_hash(image: MetadataImage, names: Iterable[str]) -> int:
    """:func:`group_hash` of the topics ``names`` as ``image`` has them."""
    return group_hash({name: topic_hash(image, name) for name in set(names)})
