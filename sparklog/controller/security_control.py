"""The controller's ACL and client-quota writes: CreateAcls, DeleteAcls, AlterClientQuotas.

Pure functions of the current image and a request, returning the records to append and the
response (Kafka's ``AclControlManager`` and ``ClientQuotaControlManager``):

- CreateAcls: each creation is validated (INVALID_REQUEST with Kafka's message otherwise); a
  binding already present succeeds without a record; a new one gets a fresh id and an
  AccessControlEntryRecord.
- DeleteAcls: each filter (INVALID_REQUEST when it names an UNKNOWN code) removes every binding
  it matches with a RemoveAccessControlEntryRecord, and reports them; a binding matched by two
  filters is removed once.
- AlterClientQuotas: entities are ``user``, ``client-id`` (either or both) or ``ip`` alone;
  keys are ``producer_byte_rate``, ``consumer_byte_rate`` (integral), ``request_percentage``,
  ``controller_mutation_rate`` for users and client ids, ``connection_creation_rate`` for ips;
  values must be positive. A ClientQuotaRecord is written only for a value that changes;
  ``validate_only`` writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sparklog.metadata.image import MetadataImage
from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.metadata.security_image import quota_entity, quota_record
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntriesEntity,
    AlterClientQuotasResponse,
    AlterClientQuotasResponseEntries,
    AlterClientQuotasResponseEntriesEntity,
    CreateAclsRequest,
    CreateAclsResponse,
    CreateAclsResponseResults,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteAclsResponseFilterResults,
    DeleteAclsResponseFilterResultsMatchingAcls,
)
from sparklog.security.acls import AclBindingFilter, StandardAcl, validate_new_acl

USER_AND_CLIENT_KEYS: dict[str, bool] = {
    # key -> integral
    "producer_byte_rate": True,
    "consumer_byte_rate": True,
    "request_percentage": False,
    "controller_mutation_rate": False,
}
IP_KEYS: dict[str, bool] = {"connection_creation_rate": True}
ENTITY_TYPES = ("user", "client-id", "ip")


def create_acls(
    image: MetadataImage, request: CreateAclsRequest, new_id: Callable[[], bytes]
) -> tuple[list[MetadataRecord], CreateAclsResponse]:
    existing = set(image.acls.acls.values())
    taken = set(image.acls.acls)
    records: list[MetadataRecord] = []
    results: list[CreateAclsResponseResults] = []
    for creation in request["creations"]:
        acl = StandardAcl.from_creation(creation)
        problem = validate_new_acl(acl)
        if problem is not None:
            results.append({"error_code": int(ErrorCode.INVALID_REQUEST), "error_message": problem})
            continue
        if acl not in existing:
            existing.add(acl)
            acl_id = new_id()
            while acl_id in taken:
                acl_id = new_id()
            taken.add(acl_id)
            records.append(make_record("AccessControlEntryRecord", acl.to_record_data(acl_id)))
        results.append({"error_code": 0, "error_message": None})
    return records, {"throttle_time_ms": 0, "results": results}


def acl_description(acl: StandardAcl) -> DeleteAclsResponseFilterResultsMatchingAcls:
    """A DeleteAcls match (its error fields set by the caller)."""
    return {
        "resource_type": int(acl.resource_type),
        "resource_name": acl.resource_name,
        "pattern_type": int(acl.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission),
    }


def delete_acls(
    image: MetadataImage, request: DeleteAclsRequest
) -> tuple[list[MetadataRecord], DeleteAclsResponse]:
    removed: set[bytes] = set()
    records: list[MetadataRecord] = []
    results: list[DeleteAclsResponseFilterResults] = []
    for raw in request["filters"]:
        binding_filter = AclBindingFilter.from_request(raw)
        problem = binding_filter.unknown_part()
        if problem is not None:
            results.append(
                {
                    "error_code": int(ErrorCode.INVALID_REQUEST),
                    "error_message": problem,
                    "matching_acls": [],
                }
            )
            continue
        matching: list[DeleteAclsResponseFilterResultsMatchingAcls] = []
        for acl_id, acl in sorted(image.acls.acls.items()):
            if not binding_filter.matches(acl):
                continue
            matching.append({"error_code": 0, "error_message": None, **acl_description(acl)})
            if acl_id not in removed:
                removed.add(acl_id)
                records.append(make_record("RemoveAccessControlEntryRecord", {"id": acl_id}))
        results.append({"error_code": 0, "error_message": None, "matching_acls": matching})
    return records, {"throttle_time_ms": 0, "filter_results": results}


def _validate_entity(
    parts: list[AlterClientQuotasRequestEntriesEntity],
) -> tuple[dict[str, str | None], str | None]:
    entity: dict[str, str | None] = {}
    if not parts:
        return entity, "Invalid empty client quota entity"
    for part in parts:
        entity_type, name = part["entity_type"], part["entity_name"]
        if entity_type in entity:
            return entity, f"Invalid client quota entity, duplicate entity entry {entity_type}"
        if entity_type not in ENTITY_TYPES:
            return entity, f"Unhandled client quota entity type: {entity_type}"
        if name is not None and not name:
            return entity, f"Empty {entity_type} not supported"
        entity[entity_type] = name
    if "ip" in entity and len(entity) > 1:
        return entity, (
            "Invalid quota entity combination, IP entity should not be combined with User "
            "or ClientId"
        )
    return entity, None


def _validate_value(keys: Mapping[str, bool], key: str, value: float) -> str | None:
    integral = keys.get(key)
    if integral is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if integral and value != int(value):
        return f"{key} cannot be a fractional value."
    return None


def alter_client_quotas(
    image: MetadataImage, request: AlterClientQuotasRequest
) -> tuple[list[MetadataRecord], AlterClientQuotasResponse]:
    records: list[MetadataRecord] = []
    results: list[AlterClientQuotasResponseEntries] = []
    for entry in request["entries"]:
        entity_parts: list[AlterClientQuotasResponseEntriesEntity] = [
            {"entity_type": p["entity_type"], "entity_name": p["entity_name"]}
            for p in entry["entity"]
        ]
        entity, problem = _validate_entity(entry["entity"])
        new_records: list[MetadataRecord] = []
        if problem is None:
            key = quota_entity(entity)
            keys = IP_KEYS if "ip" in entity else USER_AND_CLIENT_KEYS
            current = image.client_quotas.entities.get(key, {})
            for op in entry["ops"]:
                if op["remove"]:
                    if op["key"] in current:
                        new_records.append(quota_record(key, op["key"], None))
                    continue
                value = float(op["value"])
                problem = _validate_value(keys, op["key"], value)
                if problem is not None:
                    break
                if current.get(op["key"]) != value:
                    new_records.append(quota_record(key, op["key"], value))
        message: str | None = problem
        if problem is not None:
            code = int(ErrorCode.INVALID_REQUEST)
        else:
            code = 0
            records.extend(new_records)
        results.append({"error_code": code, "error_message": message, "entity": entity_parts})
    if request["validate_only"]:
        records = []
    return records, {"throttle_time_ms": 0, "entries": results}
