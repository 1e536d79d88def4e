"""KRaft control records: LeaderChange, SnapshotHeader/Footer, KRaftVersion and Voters.

Declared from Apache Kafka's ``clients/src/main/resources/common/message/
{LeaderChangeMessage,SnapshotHeaderRecord,SnapshotFooterRecord,KRaftVersionRecord,
VotersRecord}.json``. They live in control batches of ``__cluster_metadata`` (and of snapshots);
a control record's key is ``version int16 (0) | type int16`` (``ControlRecordType``) and its
value is the bare message body. Transaction markers (types 0 and 1) are not raft's business and
decode to ``None`` here.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sparklog.protocol import codec
from sparklog.protocol.schema import MessageSpec, array, field, message
from sparklog.protocol.schema import struct as struct_field


class ControlRecordError(ValueError):
    """A control record of a known type whose value does not parse."""


@dataclass(frozen=True, slots=True)
class RaftControlRecord:
    name: str
    control_type: int
    data: Mapping[str, Any]


_VOTER = (field("voter_id", "int32"), field("voter_directory_id", "uuid", "1+"))
LEADER_CHANGE = message(
    "LeaderChangeMessage",
    "0-1",
    "0+",
    field("version", "int16"),
    field("leader_id", "int32"),
    array("voters", *_VOTER),
    array("granting_voters", *_VOTER),
)
SNAPSHOT_HEADER = message(
    "SnapshotHeaderRecord",
    "0",
    "0+",
    field("version", "int16"),
    field("last_contained_log_timestamp", "int64"),
)
SNAPSHOT_FOOTER = message("SnapshotFooterRecord", "0", "0+", field("version", "int16"))
KRAFT_VERSION = message(
    "KRaftVersionRecord",
    "0",
    "0+",
    field("version", "int16"),
    field("kraft_version", "int16"),
)
VOTERS = message(
    "VotersRecord",
    "0",
    "0+",
    field("version", "int16"),
    array(
        "voters",
        field("voter_id", "int32"),
        field("voter_directory_id", "uuid"),
        array(
            "endpoints", field("name", "string"), field("host", "string"), field("port", "uint16")
        ),
        struct_field(
            "kraft_version_feature",
            field("min_supported_version", "int16"),
            field("max_supported_version", "int16"),
        ),
    ),
)

# control type (ControlRecordType) -> (spec, version written)
CONTROL_RECORDS: Final[dict[int, tuple[MessageSpec, int]]] = {
    2: (LEADER_CHANGE, 0),
    3: (SNAPSHOT_HEADER, 0),
    4: (SNAPSHOT_FOOTER, 0),
    5: (KRAFT_VERSION, 0),
    6: (VOTERS, 0),
}
CONTROL_TYPE_BY_NAME: Final[dict[str, int]] = {
    spec.name: key for key, (spec, _) in CONTROL_RECORDS.items()
}
_CONTROL_KEY: Final = struct.Struct(">hh")


def encode_control_record(name: str, data: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """``(key, value)`` of a KRaft control record such as ``LeaderChangeMessage``."""
    control_type = CONTROL_TYPE_BY_NAME.get(name)
    if control_type is None:
        raise ValueError(f"unknown control record {name!r}")
    spec, version = CONTROL_RECORDS[control_type]
    body = {"version": version, **data}
    return _CONTROL_KEY.pack(0, control_type), codec.encode_bytes(spec, version, body)


def decode_control_record(key: bytes | None, value: bytes | None) -> RaftControlRecord | None:
    """Decode a control record; ``None`` for transaction markers and unknown types."""
    if key is None or len(key) < _CONTROL_KEY.size:
        raise ControlRecordError("control record key is missing or shorter than 4 bytes")
    _key_version, control_type = _CONTROL_KEY.unpack_from(key)
    entry = CONTROL_RECORDS.get(control_type)
    if entry is None:
        return None
    spec, version = entry
    try:
        data = codec.decode(spec, version, memoryview(value or b""))
    except Exception as exc:
        raise ControlRecordError(f"cannot decode {spec.name}: {exc}") from exc
    return RaftControlRecord(spec.name, control_type, data)
