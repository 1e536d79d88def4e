"""The ACL and client-quota parts of the metadata image, and how records change them.

Contract (Kafka's ``AclsImage``/``AclsDelta`` and ``ClientQuotasImage``/``ClientQuotasDelta``):

- :class:`AclsImage` maps each ACL id (the AccessControlEntryRecord's uuid) to its
  :class:`~sparklog.security.acls.StandardAcl`. An AccessControlEntryRecord adds one;
  RemoveAccessControlEntryRecord removes it by id (an unknown id is a corrupt log).
- :class:`ClientQuotasImage` maps a quota entity - a sorted tuple of ``(entity type, name)``
  pairs, name ``None`` for the type's default (``user``, ``client-id``, ``ip``) - to its quota
  values (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``, ...). A
  ClientQuotaRecord sets one key, or removes it when ``remove`` is true; an entity without keys
  disappears.
- Both are immutable; the delta classes collect changes and :meth:`apply` builds the next one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from sparklog.metadata.records import MetadataRecord, make_record
from sparklog.security.acls import StandardAcl

QuotaEntity = tuple[tuple[str, str | None], ...]

_EMPTY: Mapping[Any, Any] = MappingProxyType({})

K = TypeVar("K")
V = TypeVar("V")


def with_changes(base: Mapping[K, V], changes: Mapping[K, V | None]) -> Mapping[K, V]:
    """A read-only copy of ``base`` with ``changes`` applied (None: the key is removed), as
    a delta applies its records to an image."""
    merged = dict(base)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return MappingProxyType(merged)


def _empty() -> Mapping[Any, Any]:
    return _EMPTY


def quota_entity(parts: Mapping[str, str | None]) -> QuotaEntity:
    """The image key of an entity given as ``{entity type: name or None}``."""
    return tuple(sorted(parts.items()))


@dataclass(frozen=True, slots=True)
class AclsImage:
    acls: Mapping[bytes, StandardAcl] = field(default_factory=_empty)

    def to_records(self) -> list[MetadataRecord]:
        return [
            make_record("AccessControlEntryRecord", acl.to_record_data(acl_id))
            for acl_id, acl in sorted(self.acls.items())
        ]


@dataclass(frozen=True, slots=True)
class ClientQuotasImage:
    entities: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=_empty)

    def to_records(self) -> list[MetadataRecord]:
        records = []
        for entity, values in sorted(self.entities.items(), key=lambda e: repr(e[0])):
            for key, value in sorted(values.items()):
                records.append(quota_record(entity, key, value))
        return records


def quota_record(entity: QuotaEntity, key: str, value: float | None) -> MetadataRecord:
    """A ClientQuotaRecord setting ``key`` of ``entity`` (``value`` None: removing it)."""
    return make_record(
        "ClientQuotaRecord",
        {
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "key": key,
            "value": 0.0 if value is None else float(value),
            "remove": value is None,
        },
    )


class SecurityDelta:
    """Pending ACL and quota changes on top of one image's :class:`AclsImage` and
    :class:`ClientQuotasImage`."""

    def __init__(self, acls: AclsImage, quotas: ClientQuotasImage) -> None:
        self._acls = acls
        self._quotas = quotas
        self.acl_changes: dict[bytes, StandardAcl | None] = {}
        self.quota_changes: dict[QuotaEntity, dict[str, float | None]] = {}

    def replay_acl(self, data: Mapping[str, Any]) -> None:
        self.acl_changes[bytes(data["id"])] = StandardAcl.from_record_data(data)

    def replay_remove_acl(self, data: Mapping[str, Any]) -> ValueError | None:
        acl_id = bytes(data["id"])
        known = self.acl_changes.get(acl_id, self._acls.acls.get(acl_id))
        if known is None:
            return ValueError(f"cannot remove unknown ACL {acl_id.hex()}")
        self.acl_changes[acl_id] = None
        return None

    def replay_quota(self, data: Mapping[str, Any]) -> None:
        entity = quota_entity({e["entity_type"]: e["entity_name"] for e in data["entity"]})
        value = None if data["remove"] else float(data["value"])
        self.quota_changes.setdefault(entity, {})[data["key"]] = value

    def apply_acls(self) -> AclsImage:
        if not self.acl_changes:
            return self._acls
        return AclsImage(with_changes(self._acls.acls, self.acl_changes))

    def apply_quotas(self) -> ClientQuotasImage:
        if not self.quota_changes:
            return self._quotas
        entities = dict(self._quotas.entities)
        for entity, changes in self.quota_changes.items():
            values = dict(entities.get(entity, {}))
            for key, value in changes.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            if values:
                entities[entity] = MappingProxyType(values)
            else:
                entities.pop(entity, None)
        return ClientQuotasImage(MappingProxyType(entities))
