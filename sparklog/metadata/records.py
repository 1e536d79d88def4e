"""Metadata records of ``__cluster_metadata`` and the KRaft control records, declared as data.

Declared from Apache Kafka's ``metadata/src/main/resources/common/metadata/*.json``, each
record with its ``apiKey``.

Serde (Kafka's ``MetadataRecordSerde``/``AbstractApiMessageSerde``): a data record's value is
``frame version (unsigned varint, always 1) | api key (unsigned varint) | version (unsigned
varint) | message body``; its record key is null.

The KRaft control records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters) are
declared in :mod:`sparklog.raft.control_records`, since the consensus layer writes them.

Decoded records are :class:`MetadataRecord` values (name, api key, version, the codec's dict).
Decoding rejects an unknown frame version, api key or record version with :class:`RecordError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sparklog.protocol import codec
from sparklog.protocol.schema import MessageSpec, array, field, message

FRAME_VERSION: Final = 1


class RecordError(ValueError):
    """Bytes that are not a metadata record this node understands (a corrupt or newer log)."""


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One decoded (or to-be-encoded) metadata record: Kafka's ``ApiMessageAndVersion``."""

    name: str
    api_key: int
    version: int
    data: Mapping[str, Any]

    def encode(self) -> bytes:
        return encode_record(self.api_key, self.version, self.data)


def _endpoints(name: str = "end_points", *, with_protocol: bool = True) -> Any:
    fields = [field("name", "string"), field("host", "string"), field("port", "uint16")]
    if with_protocol:
        fields.append(field("security_protocol", "int16"))
    return array(name, *fields)


def _features(name: str = "features") -> Any:
    return array(
        name,
        field("name", "string"),
        field("min_supported_version", "int16"),
        field("max_supported_version", "int16"),
    )


REGISTER_BROKER = message(
    "RegisterBrokerRecord",
    "0-3",
    "0+",
    field("broker_id", "int32"),
    field("is_migrating_zk_broker", "bool", "2+"),
    field("incarnation_id", "uuid"),
    field("broker_epoch", "int64"),
    _endpoints(),
    _features(),
    field("rack", "string", nullable="0+", default=None),
    field("fenced", "bool", default=True),
    field("in_controlled_shutdown", "bool", "1+"),
    field("log_dirs", "[]uuid", "3+", tag=0),
)
UNREGISTER_BROKER = message(
    "UnregisterBrokerRecord",
    "0",
    "0+",
    field("broker_id", "int32"),
    field("broker_epoch", "int64"),
)
TOPIC = message("TopicRecord", "0", "0+", field("name", "string"), field("topic_id", "uuid"))
PARTITION = message(
    "PartitionRecord",
    "0-2",
    "0+",
    field("partition_id", "int32", default=-1),
    field("topic_id", "uuid"),
    field("replicas", "[]int32"),
    field("isr", "[]int32"),
    field("removing_replicas", "[]int32"),
    field("adding_replicas", "[]int32"),
    field("leader", "int32", default=-1),
    field("leader_recovery_state", "int8", tag=0, default=0),
    field("leader_epoch", "int32", default=-1),
    field("partition_epoch", "int32", default=-1),
    field("directories", "[]uuid", "1+"),
    field("eligible_leader_replicas", "[]int32", "2+", nullable="2+", tag=1, default=None),
    field("last_known_elr", "[]int32", "2+", nullable="2+", tag=2, default=None),
)
CONFIG = message(
    "ConfigRecord",
    "0",
    "0+",
    field("resource_type", "int8"),
    field("resource_name", "string"),
    field("name", "string"),
    field("value", "string", nullable="0+", default=None),
)
PARTITION_CHANGE = message(
    "PartitionChangeRecord",
    "0-2",
    "0+",
    field("partition_id", "int32", default=-1),
    field("topic_id", "uuid"),
    field("isr", "[]int32", nullable="0+", tag=0, default=None),
    field("leader", "int32", tag=1, default=-2),
    field("replicas", "[]int32", nullable="0+", tag=2, default=None),
    field("removing_replicas", "[]int32", nullable="0+", tag=3, default=None),
    field("adding_replicas", "[]int32", nullable="0+", tag=4, default=None),
    field("leader_recovery_state", "int8", tag=5, default=-1),
    field("directories", "[]uuid", "1+", nullable="1+", tag=8, default=None),
    field("eligible_leader_replicas", "[]int32", "2+", nullable="2+", tag=6, default=None),
    field("last_known_elr", "[]int32", "2+", nullable="2+", tag=7, default=None),
)
FENCE_BROKER = message(
    "FenceBrokerRecord", "0", "0+", field("id", "int32"), field("epoch", "int64")
)
UNFENCE_BROKER = message(
    "UnfenceBrokerRecord", "0", "0+", field("id", "int32"), field("epoch", "int64")
)
REMOVE_TOPIC = message("RemoveTopicRecord", "0", "0+", field("topic_id", "uuid"))
FEATURE_LEVEL = message(
    "FeatureLevelRecord",
    "0",
    "0+",
    field("name", "string"),
    field("feature_level", "int16"),
)
PRODUCER_IDS = message(
    "ProducerIdsRecord",
    "0",
    "0+",
    field("broker_id", "int32"),
    field("broker_epoch", "int64", default=-1),
    field("next_producer_id", "int64"),
)
BROKER_REGISTRATION_CHANGE = message(
    "BrokerRegistrationChangeRecord",
    "0-2",
    "0+",
    field("broker_id", "int32"),
    field("broker_epoch", "int64"),
    field("fenced", "int8", tag=0, default=0),
    field("in_controlled_shutdown", "int8", "1+", tag=1, default=0),
    field("log_dirs", "[]uuid", "2+", tag=2),
)
NO_OP = message("NoOpRecord", "0", "0+")
REGISTER_CONTROLLER = message(
    "RegisterControllerRecord",
    "0",
    "0+",
    field("controller_id", "int32"),
    field("incarnation_id", "uuid"),
    field("zk_migration_ready", "bool"),
    _endpoints(),
    _features(),
)
ACCESS_CONTROL_ENTRY = message(
    "AccessControlEntryRecord",
    "0",
    "0+",
    field("id", "uuid"),
    field("resource_type", "int8"),
    field("resource_name", "string"),
    field("pattern_type", "int8"),
    field("principal", "string"),
    field("host", "string"),
    field("operation", "int8"),
    field("permission_type", "int8"),
)
REMOVE_ACCESS_CONTROL_ENTRY = message(
    "RemoveAccessControlEntryRecord", "0", "0+", field("id", "uuid")
)
CLIENT_QUOTA = message(
    "ClientQuotaRecord",
    "0",
    "0+",
    array(
        "entity",
        field("entity_type", "string"),
        field("entity_name", "string", nullable="0+", default=None),
    ),
    field("key", "string"),
    field("value", "float64"),
    field("remove", "bool"),
)
USER_SCRAM_CREDENTIAL = message(
    "UserScramCredentialRecord",
    "0",
    "0+",
    field("name", "string"),
    field("mechanism", "int8"),
    field("salt", "bytes"),
    field("stored_key", "bytes"),
    field("server_key", "bytes"),
    field("iterations", "int32"),
)
REMOVE_USER_SCRAM_CREDENTIAL = message(
    "RemoveUserScramCredentialRecord",
    "0",
    "0+",
    field("name", "string"),
    field("mechanism", "int8"),
)

# api key -> (spec, the version this node writes)
DATA_RECORDS: Final[dict[int, tuple[MessageSpec, int]]] = {
    0: (REGISTER_BROKER, 3),
    1: (UNREGISTER_BROKER, 0),
    2: (TOPIC, 0),
    3: (PARTITION, 2),
    4: (CONFIG, 0),
    5: (PARTITION_CHANGE, 2),
    7: (FENCE_BROKER, 0),
    8: (UNFENCE_BROKER, 0),
    9: (REMOVE_TOPIC, 0),
    11: (USER_SCRAM_CREDENTIAL, 0),
    12: (FEATURE_LEVEL, 0),
    14: (CLIENT_QUOTA, 0),
    15: (PRODUCER_IDS, 0),
    17: (BROKER_REGISTRATION_CHANGE, 2),
    18: (ACCESS_CONTROL_ENTRY, 0),
    19: (REMOVE_ACCESS_CONTROL_ENTRY, 0),
    20: (NO_OP, 0),
    22: (REMOVE_USER_SCRAM_CREDENTIAL, 0),
    27: (REGISTER_CONTROLLER, 0),
}
KEY_BY_NAME: Final[dict[str, int]] = {spec.name: key for key, (spec, _) in DATA_RECORDS.items()}


def _write_uvarint(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise RecordError("truncated metadata record header")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise RecordError("metadata record header varint is too long")


def _resolve(name_or_key: str | int) -> tuple[int, MessageSpec]:
    key = KEY_BY_NAME.get(name_or_key) if isinstance(name_or_key, str) else name_or_key
    if key is None or key not in DATA_RECORDS:
        raise ValueError(f"unknown metadata record {name_or_key!r}")
    return key, DATA_RECORDS[key][0]


def latest_version(name_or_key: str | int) -> int:
    """The version of a record this node writes (the newest it declares)."""
    key, _ = _resolve(name_or_key)
    return DATA_RECORDS[key][1]


def make_record(name: str, data: Mapping[str, Any], version: int | None = None) -> MetadataRecord:
    """A record to append: ``make_record("TopicRecord", {"name": ..., "topic_id": ...})``."""
    key, spec = _resolve(name)
    chosen = DATA_RECORDS[key][1] if version is None else version
    if chosen not in spec.valid_versions:
        raise ValueError(f"{name} has no version {chosen}")
    return MetadataRecord(spec.name, key, chosen, dict(data))


def encode_record(name_or_key: str | int, version: int, data: Mapping[str, Any]) -> bytes:
    key, spec = _resolve(name_or_key)
    if version not in spec.valid_versions:
        raise ValueError(f"{spec.name} has no version {version}")
    out = bytearray()
    _write_uvarint(FRAME_VERSION, out)
    _write_uvarint(key, out)
    _write_uvarint(version, out)
    out += codec.encode_bytes(spec, version, dict(data))
    return bytes(out)


def decode_record(buf: bytes | bytearray | memoryview) -> MetadataRecord:
    """Decode one record value; raises :class:`RecordError` for anything we cannot read."""
    raw = bytes(buf)
    frame, pos = _read_uvarint(raw, 0)
    if frame != FRAME_VERSION:
        raise RecordError(f"unsupported metadata record frame version {frame}")
    key, pos = _read_uvarint(raw, pos)
    version, pos = _read_uvarint(raw, pos)
    entry = DATA_RECORDS.get(key)
    if entry is None:
        raise RecordError(f"unknown metadata record api key {key}")
    spec = entry[0]
    if version not in spec.valid_versions:
        raise RecordError(f"unsupported {spec.name} version {version}")
    try:
        data = codec.decode(spec, version, memoryview(raw)[pos:])
    except RecordError:
        raise
    except Exception as exc:
        raise RecordError(f"cannot decode {spec.name} v{version}: {exc}") from exc
    return MetadataRecord(spec.name, key, version, data)
