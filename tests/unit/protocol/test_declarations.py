"""Checks on the per-API declarations in ``sparklog.protocol.messages``.

Three layers:

- structural facts (unique keys, served versions inside the declared ones, the version ranges,
  flexible versions and listeners of Apache Kafka 4.1 pinned in a table, and the version
  boundaries of the fields real clients depend on);
- realistic requests and responses, built the way a client or broker fills them, round-trip
  through the codec (``decode(encode(m))`` gives ``m`` plus defaults, ``encode(decode(b)) == b``);
  building them also asserts that every field a test sets exists in that version, so a wrong
  version boundary in a declaration fails here;
- the same messages encoded by kafka-python's independent JSON-driven encoder give the same
  bytes as ours (skipped when that kafka-python generation is not installed).
"""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from typing import Any

import pytest

import sparklog.protocol.messages as messages_pkg
from sparklog.protocol import codec
from sparklog.protocol.schema import Api, Field, MessageSpec, Versions
from tests.unit.protocol.declaration_cases import BATCH, CASES, Message, fetch_response


def _declared_apis() -> dict[str, Api]:
    """Every module-level ``Api`` under ``messages``, found without the registry."""
    found: dict[str, Api] = {}
    for info in pkgutil.iter_modules(messages_pkg.__path__):
        module = importlib.import_module(f"{messages_pkg.__name__}.{info.name}")
        apis = [value for value in vars(module).values() if isinstance(value, Api)]
        if info.name == "__init__":
            continue
        assert len(apis) <= 1, f"{info.name} defines {len(apis)} Api objects"
        if apis:
            found[info.name] = apis[0]
    return found


APIS = _declared_apis()
BY_KEY = {api.key: api for api in APIS.values()}

# (key, name, served, validVersions, flexibleVersions, also on the controller listener)
# as in Apache Kafka 4.1's message definitions (versions removed by KIP-896 excluded).
KAFKA_FACTS = [
    (0, "Produce", "3-13", "3-13", "9+", False),
    (1, "Fetch", "4-18", "4-18", "12+", True),
    (2, "ListOffsets", "1-10", "1-11", "6+", False),
    (3, "Metadata", "0-13", "0-13", "9+", False),
    (10, "FindCoordinator", "0-6", "0-6", "3+", False),
    (18, "ApiVersions", "0-4", "0-4", "3+", True),
    (19, "CreateTopics", "2-7", "2-7", "5+", True),
    (20, "DeleteTopics", "1-6", "1-6", "4+", True),
    (21, "DeleteRecords", "0-2", "0-2", "2+", False),
    (22, "InitProducerId", "0-5", "0-6", "2+", False),
    (23, "OffsetForLeaderEpoch", "2-4", "2-4", "4+", False),
    (32, "DescribeConfigs", "1-4", "1-4", "4+", True),
    (33, "AlterConfigs", "0-2", "0-2", "2+", True),
    (35, "DescribeLogDirs", "1-4", "1-4", "2+", False),
    (37, "CreatePartitions", "0-3", "0-3", "2+", True),
    (43, "ElectLeaders", "0-2", "0-2", "2+", True),
    (44, "IncrementalAlterConfigs", "0-1", "0-1", "1+", True),
    (60, "DescribeCluster", "0-2", "0-2", "0+", True),
    (16, "ListGroups", "0-5", "0-5", "3+", False),
    (61, "DescribeProducers", "0-0", "0-0", "0+", False),
    (74, "ListConfigResources", "0-1", "0-1", "0+", False),
    (75, "DescribeTopicPartitions", "0-0", "0-0", "0+", False),
]


# --- structural facts --------------------------------------------------------------------------


def test_api_keys_and_names_are_unique() -> None:
    keys = [api.key for api in APIS.values()]
    names = [api.name for api in APIS.values()]
    assert len(keys) == len(set(keys))
    assert len(names) == len(set(names))


def test_served_versions_sit_inside_declared_versions() -> None:
    for api in APIS.values():
        served = Versions(api.min_version, api.max_version)
        assert not served.empty, api.name
        assert served.is_subset_of(api.request.valid_versions), api.name
        assert served.is_subset_of(api.response.valid_versions), api.name
        assert api.request.valid_versions == api.response.valid_versions, api.name
        assert api.request.flexible_versions == api.response.flexible_versions, api.name
        assert api.listeners <= {"broker", "controller"}
        assert "broker" in api.listeners


@pytest.mark.parametrize("facts", KAFKA_FACTS, ids=lambda facts: str(facts[1]))
def test_versions_match_apache_kafka(facts: tuple[int, str, str, str, str, bool]) -> None:
    key, name, served, valid, flexible, on_controller = facts
    api = BY_KEY[key]
    assert api.name == name
    assert f"{api.min_version}-{api.max_version}" == served
    assert str(api.request.valid_versions) == valid
    assert str(api.request.flexible_versions) == flexible
    assert ("controller" in api.listeners) == on_controller
    assert api.request.name == f"{name}Request"
    assert api.response.name == f"{name}Response"


def _field(spec: MessageSpec, path: str) -> Field:
    fields = spec.fields
    found: Field | None = None
    for part in path.split("."):
        found = next((f for f in fields if f.name == part), None)
        assert found is not None, f"{spec.name} has no {path}"
        fields = found.fields
    assert found is not None
    return found


# (api key, "request"/"response", field path, versions, nullable versions, tag)
FIELD_FACTS = [
    (0, "request", "transactional_id", "3+", "3+", None),
    (0, "request", "topic_data.name", "0-12", "none", None),
    (0, "request", "topic_data.topic_id", "13+", "none", None),
    (0, "request", "topic_data.partition_data.records", "0+", "0+", None),
    (0, "response", "responses.partition_responses.current_leader", "10+", "none", 0),
    (0, "response", "node_endpoints", "10+", "none", 0),
    (1, "request", "cluster_id", "12+", "12+", 0),
    (1, "request", "replica_id", "0-14", "none", None),
    (1, "request", "replica_state", "15+", "none", 1),
    (1, "request", "topics.topic", "0-12", "none", None),
    (1, "request", "topics.topic_id", "13+", "none", None),
    (1, "request", "topics.partitions.last_fetched_epoch", "12+", "none", None),
    (1, "request", "topics.partitions.replica_directory_id", "17+", "none", 0),
    (1, "request", "topics.partitions.high_watermark", "18+", "none", 1),
    (1, "request", "forgotten_topics_data", "7+", "none", None),
    (1, "request", "rack_id", "11+", "none", None),
    (1, "response", "responses.partitions.diverging_epoch", "12+", "none", 0),
    (1, "response", "responses.partitions.current_leader", "12+", "none", 1),
    (1, "response", "responses.partitions.snapshot_id", "12+", "none", 2),
    (1, "response", "responses.partitions.aborted_transactions", "4+", "4+", None),
    (1, "response", "responses.partitions.preferred_read_replica", "11+", "none", None),
    (1, "response", "responses.partitions.records", "0+", "0+", None),
    (1, "response", "node_endpoints", "16+", "none", 0),
    (2, "request", "timeout_ms", "10+", "none", None),
    (3, "request", "topics", "0+", "1+", None),
    (3, "request", "topics.name", "0+", "10+", None),
    (3, "response", "topics.name", "0+", "12+", None),
    (3, "response", "cluster_authorized_operations", "8-10", "none", None),
    (3, "response", "error_code", "13+", "none", None),
    (19, "response", "topics.topic_config_error_code", "5+", "none", 0),
    (20, "request", "topics", "6+", "none", None),
    (20, "request", "topic_names", "0-5", "none", None),
    (10, "request", "coordinator_keys", "4+", "none", None),
    (60, "response", "brokers.is_fenced", "2+", "none", None),
]


@pytest.mark.parametrize("facts", FIELD_FACTS, ids=lambda facts: f"{facts[0]}.{facts[2]}")
def test_field_version_boundaries(facts: tuple[int, str, str, str, str, int | None]) -> None:
    key, side, path, versions, nullable, tag = facts
    api = BY_KEY[key]
    found = _field(api.request if side == "request" else api.response, path)
    assert str(found.versions) == versions
    assert str(found.nullable_versions) == nullable
    assert found.tag == tag


def test_defaults_follow_kafka() -> None:
    fetch = BY_KEY[1]
    assert _field(fetch.request, "replica_id").default_value() == -1
    assert _field(fetch.request, "max_bytes").default_value() == 0x7FFFFFFF
    assert _field(fetch.request, "topics.partitions.high_watermark").default_value() == 2**63 - 1
    assert _field(fetch.request, "topics.partitions.replica_directory_id").default_value() == bytes(
        16
    )
    assert _field(fetch.request, "cluster_id").default_value() is None
    assert _field(BY_KEY[3].request, "allow_auto_topic_creation").default_value() is True
    assert _field(BY_KEY[3].response, "topics.topic_authorized_operations").default_value() == (
        -(2**31)
    )
    assert _field(BY_KEY[19].request, "timeout_ms").default_value() == 60000
    assert _field(BY_KEY[23].request, "replica_id").default_value() == -2


# --- realistic messages (declaration_cases.py) round-trip -------------------------------


def _case_id(case: tuple[int, str, int, Message]) -> str:
    key, side, version, _ = case
    return f"{BY_KEY[key].name}-{side}-v{version}"


def _spec(key: int, side: str) -> MessageSpec:
    api = BY_KEY[key]
    return api.request if side == "request" else api.response


def _expected(fields: tuple[Field, ...], version: int, msg: Message, where: str) -> Message:
    """``msg`` as the codec should decode it: every declared field, defaults where unset.

    A key naming a field the version does not have is a mistake in the test or in the
    declaration's version boundary, so it fails here rather than silently vanishing.
    """
    known = {f.name for f in fields}
    unknown = set(msg) - known
    assert not unknown, f"{where}: no such fields {unknown}"
    out: Message = {}
    for f in fields:
        if f.name in msg and not f.present_in(version):
            raise AssertionError(f"{where}.{f.name} is not in version {version}")
        value = msg[f.name] if f.name in msg else f.default_value()
        if f.is_struct_array and value is not None:
            value = [_expected(f.fields, version, item, f"{where}.{f.name}") for item in value]
        elif f.is_struct and value is not None:
            value = _expected(f.fields, version, value, f"{where}.{f.name}")
        out[f.name] = value
    return out


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_realistic_message_round_trips(case: tuple[int, str, int, Message]) -> None:
    key, side, version, msg = case
    spec = _spec(key, side)
    api = BY_KEY[key]
    assert api.supports(version), "cases use versions we serve"
    expected = _expected(spec.fields, version, msg, spec.name)
    wire = codec.encode_bytes(spec, version, msg)
    decoded = codec.decode(spec, version, wire)
    assert decoded == expected
    assert codec.encode_bytes(spec, version, decoded) == wire


def test_fetch_records_decode_without_copy() -> None:
    spec = BY_KEY[1].response
    wire = codec.encode_bytes(spec, 12, fetch_response(12))
    decoded = codec.decode(spec, 12, memoryview(wire))
    records = decoded["responses"][0]["partitions"][0]["records"]
    assert isinstance(records, memoryview)
    assert bytes(records) == BATCH


def test_every_served_version_has_a_case() -> None:
    """The hot APIs are exercised at their edges: the oldest and newest served versions."""
    covered = {(key, side, version) for key, side, version, _ in CASES}
    for key in (0, 1, 3):
        api = BY_KEY[key]
        for side in ("request", "response"):
            assert (key, side, api.min_version) in covered
            assert (key, side, api.max_version) in covered


# --- cross-check with kafka-python's JSON-driven encoder -----------------------------------------


def _kafka_python_class(spec: MessageSpec) -> Any:
    """kafka-python (3.x) message class generated from the same Kafka JSON, or skip."""
    api_message = pytest.importorskip("kafka.protocol.api_message")
    _import_kafka_python_messages()
    seen: set[type[Any]] = set()
    pending: list[type[Any]] = [api_message.ApiMessage]
    while pending:
        subclasses: list[type[Any]] = pending.pop().__subclasses__()
        for sub in subclasses:
            if sub in seen:
                continue
            seen.add(sub)
            pending.append(sub)
            json = getattr(sub, "_json", None)
            if json is not None and json.get("name") == spec.name:
                return sub
    pytest.skip(f"kafka-python has no {spec.name}")


def _import_kafka_python_messages() -> None:
    for name in ("admin", "consumer", "metadata", "producer"):
        package = importlib.import_module(f"kafka.protocol.{name}")
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")


# kafka-python renames a few of Kafka's fields (and decodes them as bit sets).
_KAFKA_PYTHON_NAMES = {
    "topic_authorized_operations": "authorized_operations",
    "cluster_authorized_operations": "authorized_operations",
}


def _to_kafka_python(container: Any, fields: tuple[Field, ...], msg: Message) -> dict[str, Any]:
    """Our dict as kafka-python constructor arguments (uuid objects, nested containers).

    Tagged fields equal to their default are dropped: Kafka omits them and so do we.
    """
    struct_fields = container._struct.fields
    out: dict[str, Any] = {}
    for f in fields:
        if f.name not in msg:
            continue
        value = msg[f.name]
        if f.tag is not None and value == f.default_value():
            continue
        their_name = f.name if f.name in struct_fields else _KAFKA_PYTHON_NAMES[f.name]
        their = struct_fields[their_name]
        if f.is_struct_array and value is not None:
            cls = their.data_class
            value = [cls(**_to_kafka_python(cls, f.fields, item)) for item in value]
        elif f.is_struct and value is not None:
            cls = their.data_class
            value = cls(**_to_kafka_python(cls, f.fields, value))
        elif f.type == "uuid":
            value = uuid.UUID(bytes=value)
        elif their_name == "authorized_operations":
            # kafka-python takes this int32 bitfield as the set of its bit positions.
            value = {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}
        out[their_name] = value
    return out


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_same_bytes_as_kafka_python(case: tuple[int, str, int, Message]) -> None:
    key, side, version, msg = case
    spec = _spec(key, side)
    kp_class = _kafka_python_class(spec)
    theirs = bytes(
        kp_class(version=version, **_to_kafka_python(kp_class, spec.fields, msg)).encode()
    )
    assert codec.encode_bytes(spec, version, msg) == theirs
    assert codec.decode(spec, version, theirs) == _expected(spec.fields, version, msg, spec.name)
