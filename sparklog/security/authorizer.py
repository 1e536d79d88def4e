"""The StandardAuthorizer's decision, sans-IO: may this principal do this to that resource?

Contract (Kafka 4.x ``StandardAuthorizer`` / ``StandardAuthorizerData``):

- ``authorizer.class.name`` = ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``
  enables it; empty (the default) means no authorizer and every request is allowed, as Kafka.
  Any other class is refused at start with a message naming the key.
- A principal listed in ``super.users`` (``User:a;User:b``) may do anything.
- Otherwise the bindings that apply to the resource are those of its type whose pattern covers
  it: LITERAL with its exact name, LITERAL ``*``, and PREFIXED with a prefix of its name. Of
  those, a binding matches the request when its principal is the request's or ``User:*``, its
  host is the client's address or ``*``, and its operation is the one asked, ``ALL``, or (ALLOW
  bindings only) one that implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE;
  ALTER_CONFIGS implies DESCRIBE_CONFIGS. A DENY binding never implies anything.
- A matching DENY wins over any ALLOW. With no matching binding the answer is DENIED when the
  resource has any binding at all (for anyone), else ``allow.everyone.if.no.acl.found``.
- :meth:`StandardAuthorizer.authorize_by_resource_type` is Kafka's ``Authorizer`` default: may
  the principal do ``operation`` on at least one resource of a type (used for the idempotent
  producer's ``WRITE`` on any topic).

The bindings come from the metadata image (``acls_supplier``); the index is rebuilt only when
the image's ACL mapping changes, so a check costs a few dictionary look-ups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sparklog.config_keys import ConfigError
from sparklog.security.acls import (
    IMPLIES_DESCRIBE,
    IMPLIES_DESCRIBE_CONFIGS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from sparklog.security.principal import KafkaPrincipal

STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class AuthorizerConfigError(ConfigError):
    """A server configuration the authorizer cannot run with; names the key."""


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:broker``)."""
    if not value:
        return frozenset()
    users = set()
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        principal_type, sep, _ = item.partition(":")
        if not sep or not principal_type:
            raise AuthorizerConfigError(
                f"Invalid value {value!r} for configuration super.users: {item!r} is not a "
                "principal of the form Type:name"
            )
        users.add(item)
    return frozenset(users)


def acl_matches(
    acl: StandardAcl, principals: tuple[str, str], host: str, operation: AclOperation
) -> AclPermissionType | None:
    """The permission ``acl`` gives this request, or None if it does not match it
    (``StandardAuthorizerData.findResult``; the resource is assumed to match)."""
    if acl.principal not in principals:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission == AclPermissionType.ALLOW:
            if operation == AclOperation.DESCRIBE:
                if acl.operation not in IMPLIES_DESCRIBE:
                    return None
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                if acl.operation not in IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif acl.operation != operation:
                return None
        elif acl.operation != operation:
            return None
    return acl.permission


@dataclass(slots=True)
class _TypeIndex:
    literal: dict[str, list[StandardAcl]] = field(default_factory=dict)
    prefixed: dict[str, list[StandardAcl]] = field(default_factory=dict)
    prefix_lengths: list[int] = field(default_factory=list)

    def applicable(self, name: str) -> Iterable[StandardAcl]:
        yield from self.literal.get(name, ())
        if name != WILDCARD:
            yield from self.literal.get(WILDCARD, ())
        for length in self.prefix_lengths:
            if length > len(name):
                break
            yield from self.prefixed.get(name[:length], ())


def _index(acls: Iterable[StandardAcl]) -> dict[ResourceType, _TypeIndex]:
    index: dict[ResourceType, _TypeIndex] = {}
    for acl in acls:
        entry = index.setdefault(acl.resource_type, _TypeIndex())
        if acl.pattern_type == PatternType.LITERAL:
            entry.literal.setdefault(acl.resource_name, []).append(acl)
        elif acl.pattern_type == PatternType.PREFIXED:
            entry.prefixed.setdefault(acl.resource_name, []).append(acl)
    for entry in index.values():
        entry.prefix_lengths = sorted({len(p) for p in entry.prefixed})
    return index


class StandardAuthorizer:
    """Decides requests against the ACL bindings of the current metadata image."""

    def __init__(
        self,
        acls_supplier: Callable[[], Mapping[Any, StandardAcl]],
        *,
        super_users: frozenset[str] = frozenset(),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self._acls_supplier = acls_supplier
        self.super_users = super_users
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._source: Mapping[Any, StandardAcl] | None = None
        self._index: dict[ResourceType, _TypeIndex] = {}

    @staticmethod
    def from_config(
        config: Any, acls_supplier: Callable[[], Mapping[Any, StandardAcl]]
    ) -> StandardAuthorizer | None:
        """The authorizer ``config`` (a ServerConfig) asks for, or None when it asks none."""
        class_name = str(config.get("authorizer.class.name") or "").strip()
        if not class_name:
            return None
        if class_name != STANDARD_AUTHORIZER:
            raise AuthorizerConfigError(
                f"Invalid value {class_name} for configuration authorizer.class.name: "
                f"sparklog provides only {STANDARD_AUTHORIZER}"
            )
        return StandardAuthorizer(
            acls_supplier,
            super_users=parse_super_users(config.get("super.users")),
            allow_everyone_if_no_acl_found=bool(config.get("allow.everyone.if.no.acl.found")),
        )

    def _current(self) -> dict[ResourceType, _TypeIndex]:
        acls = self._acls_supplier()
        if acls is not self._source:
            self._index = _index(acls.values())
            self._source = acls
        return self._index

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return str(principal) in self.super_users

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if str(principal) in self.super_users:
            return True
        entry = self._current().get(resource_type)
        if entry is None:
            return self.allow_everyone_if_no_acl_found
        principals = (str(principal), WILDCARD_PRINCIPAL)
        allowed = False
        has_resource_acls = False
        for acl in entry.applicable(name):
            has_resource_acls = True
            permission = acl_matches(acl, principals, host, operation)
            if permission == AclPermissionType.DENY:
                return False
            if permission == AclPermissionType.ALLOW:
                allowed = True
        if allowed:
            return True
        return not has_resource_acls and self.allow_everyone_if_no_acl_found

    def authorize_by_resource_type(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """May ``principal`` do ``operation`` on some resource of ``resource_type``?"""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        entry = self._current().get(resource_type)
        if entry is None:
            return False
        principals = (str(principal), WILDCARD_PRINCIPAL)
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow: list[StandardAcl] = []
        every = [acl for acls in entry.literal.values() for acl in acls]
        every += [acl for acls in entry.prefixed.values() for acl in acls]
        for acl in every:
            if acl.principal not in principals or acl.host not in (WILDCARD, host):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            if acl.permission == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL:
                    if acl.resource_name == WILDCARD:
                        return False
                    deny_literal.add(acl.resource_name)
                else:
                    deny_prefixed.add(acl.resource_name)
            elif acl.permission == AclPermissionType.ALLOW:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return True
                allow.append(acl)
        for acl in allow:
            if acl.pattern_type == PatternType.LITERAL and acl.resource_name in deny_literal:
                continue
            name = acl.resource_name
            if any(name[:i] in deny_prefixed for i in range(1, len(name) + 1)):
                continue
            return True
        return False
