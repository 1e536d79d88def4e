"""ACL bindings as Kafka models them: resource patterns, entries, filters and their wire codes.

Contract (Kafka's ``org.apache.kafka.common.acl`` / ``resource`` and ``StandardAcl``):

- The enums carry Kafka's wire codes (``AclOperation``, ``AclPermissionType``, ``ResourceType``,
  ``PatternType``); they are what CreateAcls / DescribeAcls / DeleteAcls and the
  AccessControlEntryRecord carry.
- A :class:`StandardAcl` is one binding: a resource pattern (type, name, LITERAL or PREFIXED)
  and an entry (principal ``Type:name``, host, operation, ALLOW or DENY). ``*`` as a LITERAL
  name matches every resource of the type; ``User:*`` matches every principal; host ``*``
  every host.
- An :class:`AclBindingFilter` selects bindings (DescribeAcls, DeleteAcls): ``None`` fields and
  the ``ANY`` codes match anything; pattern type ``MATCH`` selects every binding that would
  apply to the named resource (literal equal, literal ``*``, or a prefix of it).
- :func:`validate_new_acl` is the controller's check of a binding to create
  (``AclControlManager.validateNewAcl``): it returns an error message or ``None``.

Pure data and functions; no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

WILDCARD: Final = "*"
WILDCARD_PRINCIPAL: Final = "User:*"
CLUSTER_NAME: Final = "kafka-cluster"


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


# Operations an ALLOW binding implies (StandardAuthorizerData.IMPLIES_DESCRIBE / _CONFIGS).
IMPLIES_DESCRIBE: Final = frozenset(
    {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    }
)
IMPLIES_DESCRIBE_CONFIGS: Final = frozenset(
    {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
)


def _enum(kind: type[enum.IntEnum], code: int) -> Any:
    try:
        return kind(code)
    except ValueError:
        return kind(0)  # UNKNOWN, as Kafka's fromCode


@dataclass(frozen=True, slots=True, order=True)
class StandardAcl:
    """One ACL binding (Kafka's ``StandardAcl``)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def to_record_data(self, acl_id: bytes) -> dict[str, Any]:
        """The AccessControlEntryRecord fields of this binding under ``acl_id``."""
        return {
            "id": acl_id,
            "resource_type": int(self.resource_type),
            "resource_name": self.resource_name,
            "pattern_type": int(self.pattern_type),
            "principal": self.principal,
            "host": self.host,
            "operation": int(self.operation),
            "permission_type": int(self.permission),
        }

    @staticmethod
    def from_record_data(data: Mapping[str, Any]) -> StandardAcl:
        return StandardAcl(
            _enum(ResourceType, data["resource_type"]),
            data["resource_name"],
            _enum(PatternType, data["pattern_type"]),
            data["principal"],
            data["host"],
            _enum(AclOperation, data["operation"]),
            _enum(AclPermissionType, data["permission_type"]),
        )

    @staticmethod
    def from_creation(data: Mapping[str, Any]) -> StandardAcl:
        """A CreateAcls ``creations`` entry."""
        return StandardAcl(
            _enum(ResourceType, data["resource_type"]),
            data["resource_name"],
            _enum(PatternType, data.get("resource_pattern_type", PatternType.LITERAL)),
            data["principal"],
            data["host"],
            _enum(AclOperation, data["operation"]),
            _enum(AclPermissionType, data["permission_type"]),
        )

    def applies_to(self, resource_type: ResourceType, name: str) -> bool:
        """True if this binding's pattern covers the literal resource ``name``."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name in (name, WILDCARD)
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return False


def validate_new_acl(acl: StandardAcl) -> str | None:
    """Why the controller refuses to create ``acl`` (INVALID_REQUEST), or None."""
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {acl.permission.name}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    principal_type, sep, _ = acl.principal.partition(":")
    if not sep or not principal_type:
        return f"Could not parse principal from `{acl.principal}` (no colon is present)."
    return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """DescribeAcls / DeleteAcls filter (Kafka's ``AclBindingFilter``)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    @staticmethod
    def from_request(data: Mapping[str, Any]) -> AclBindingFilter:
        """A DescribeAcls request body or a DeleteAcls ``filters`` entry."""
        return AclBindingFilter(
            _enum(ResourceType, data["resource_type_filter"]),
            data.get("resource_name_filter"),
            _enum(PatternType, data.get("pattern_type_filter", PatternType.LITERAL)),
            data.get("principal_filter"),
            data.get("host_filter"),
            _enum(AclOperation, data["operation"]),
            _enum(AclPermissionType, data["permission_type"]),
        )

    def unknown_part(self) -> str | None:
        """Why this filter is invalid (it names an UNKNOWN code), or None."""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == AclOperation.UNKNOWN or self.permission == AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def _matches_pattern(self, acl: StandardAcl) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type in (PatternType.ANY, PatternType.MATCH):
            if self.resource_name is None:
                return True
            if self.pattern_type == PatternType.ANY:
                return self.resource_name == acl.resource_name
            # MATCH: the binding would apply to a resource named resource_name.
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(acl.resource_name)
        if self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name

    def matches(self, acl: StandardAcl) -> bool:
        return (
            self._matches_pattern(acl)
            and (self.principal is None or self.principal == acl.principal)
            and (self.host is None or self.host == acl.host)
            and self.operation in (AclOperation.ANY, acl.operation)
            and self.permission in (AclPermissionType.ANY, acl.permission)
        )
