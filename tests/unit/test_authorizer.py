"""The StandardAuthorizer's decisions (sparklog.security.authorizer), by example and by property:
deny wins, implied operations, literal / prefixed / wildcard patterns, hosts, super users,
allow.everyone.if.no.acl.found, and the ACL records' round trip through the metadata image."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.metadata.delta import MetadataDelta, MetadataReplayError
from sparklog.metadata.image import MetadataImage
from sparklog.metadata.records import decode_record, make_record
from sparklog.metadata.security_image import quota_entity, quota_record
from sparklog.security.acls import (
    IMPLIES_DESCRIBE,
    IMPLIES_DESCRIBE_CONFIGS,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
    validate_new_acl,
)
from sparklog.security.authorizer import (
    AuthorizerConfigError,
    StandardAuthorizer,
    parse_super_users,
)
from sparklog.security.principal import ANONYMOUS, KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
HOST = "10.0.0.1"
OP = AclOperation
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
TOPIC = ResourceType.TOPIC
LITERAL = PatternType.LITERAL
PREFIXED = PatternType.PREFIXED


def acl(
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    name: str = "orders",
    pattern: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    resource_type: ResourceType = TOPIC,
) -> StandardAcl:
    return StandardAcl(resource_type, name, pattern, principal, host, operation, permission)


def authorizer(*acls: StandardAcl, **options: object) -> StandardAuthorizer:
    mapping: Mapping[bytes, StandardAcl] = MappingProxyType(
        {i.to_bytes(16, "big"): a for i, a in enumerate(acls)}
    )
    return StandardAuthorizer(lambda: mapping, **options)  # type: ignore[arg-type]


def allowed(auth: StandardAuthorizer, op: AclOperation, name: str = "orders", **kw: object) -> bool:
    principal = kw.get("principal", ALICE)
    host = kw.get("host", HOST)
    rtype = kw.get("resource_type", TOPIC)
    return auth.authorize(principal, host, op, rtype, name)  # type: ignore[arg-type]


def test_no_acls_denies_unless_allow_everyone() -> None:
    assert not allowed(authorizer(), OP.READ)
    assert allowed(authorizer(allow_everyone_if_no_acl_found=True), OP.READ)


def test_allow_everyone_does_not_apply_once_the_resource_has_acls() -> None:
    auth = authorizer(acl(OP.READ, principal="User:bob"), allow_everyone_if_no_acl_found=True)
    assert not allowed(auth, OP.READ)
    assert allowed(auth, OP.READ, principal=BOB)
    # another topic has no ACL: the default applies
    assert allowed(auth, OP.READ, "payments")


def test_literal_prefixed_and_wildcard_patterns() -> None:
    auth = authorizer(
        acl(OP.READ, name="orders"),
        acl(OP.WRITE, name="pay", pattern=PREFIXED),
        acl(OP.CREATE, name="*"),
    )
    assert allowed(auth, OP.READ, "orders")
    assert not allowed(auth, OP.READ, "orders2")
    assert allowed(auth, OP.WRITE, "payments")
    assert allowed(auth, OP.WRITE, "pay")
    assert not allowed(auth, OP.WRITE, "pa")
    assert allowed(auth, OP.CREATE, "anything")
    # a literal name that is a prefix of the resource does not match it
    assert not allowed(authorizer(acl(OP.READ, name="ord")), OP.READ, "orders")


def test_deny_wins_and_deny_implies_nothing() -> None:
    auth = authorizer(acl(OP.ALL), acl(OP.WRITE, DENY, name="ord", pattern=PREFIXED))
    assert not allowed(auth, OP.WRITE)
    assert allowed(auth, OP.READ)
    assert allowed(auth, OP.DESCRIBE)  # a DENY WRITE does not deny DESCRIBE


def test_implied_operations() -> None:
    for implying in IMPLIES_DESCRIBE:
        assert allowed(authorizer(acl(implying)), OP.DESCRIBE)
    assert allowed(authorizer(acl(OP.ALTER_CONFIGS)), OP.DESCRIBE_CONFIGS)
    assert not allowed(authorizer(acl(OP.DESCRIBE)), OP.READ)
    assert not allowed(authorizer(acl(OP.CREATE)), OP.DESCRIBE)
    assert not allowed(authorizer(acl(OP.DESCRIBE_CONFIGS)), OP.ALTER_CONFIGS)


def test_principal_wildcard_host_and_super_users() -> None:
    auth = authorizer(acl(OP.READ, principal="User:*", host="10.0.0.1"))
    assert allowed(auth, OP.READ, principal=BOB)
    assert not allowed(auth, OP.READ, principal=BOB, host="10.0.0.2")
    sup = authorizer(acl(OP.READ, DENY, principal="User:*"), super_users=frozenset({"User:bob"}))
    assert allowed(sup, OP.READ, principal=BOB)
    assert not allowed(sup, OP.READ)
    assert parse_super_users("User:a; User:b;") == frozenset({"User:a", "User:b"})
    with pytest.raises(AuthorizerConfigError, match=r"super\.users"):
        parse_super_users("alice")


def test_authorize_by_resource_type() -> None:
    auth = authorizer(acl(OP.WRITE, name="pay", pattern=PREFIXED))
    assert auth.authorize_by_resource_type(ALICE, HOST, OP.WRITE, TOPIC)
    assert not auth.authorize_by_resource_type(BOB, HOST, OP.WRITE, TOPIC)
    denied = authorizer(
        acl(OP.WRITE, name="payments"), acl(OP.WRITE, DENY, name="pa", pattern=PREFIXED)
    )
    assert not denied.authorize_by_resource_type(ALICE, HOST, OP.WRITE, TOPIC)
    wildcard_deny = authorizer(acl(OP.WRITE, name="x"), acl(OP.WRITE, DENY, name="*"))
    assert not wildcard_deny.authorize_by_resource_type(ALICE, HOST, OP.WRITE, TOPIC)


def test_from_config() -> None:
    class Config(dict[str, object]):
        pass

    empty = Config({"authorizer.class.name": ""})
    assert StandardAuthorizer.from_config(empty, dict) is None
    other = Config({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(AuthorizerConfigError, match=r"authorizer\.class\.name"):
        StandardAuthorizer.from_config(other, dict)
    standard = Config(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
            "allow.everyone.if.no.acl.found": True,
        }
    )
    auth = StandardAuthorizer.from_config(standard, dict)
    assert auth is not None and auth.super_users == {"User:admin"}
    assert auth.allow_everyone_if_no_acl_found


def test_filters_and_validation() -> None:
    binding = acl(OP.READ, name="pay", pattern=PREFIXED)
    assert AclBindingFilter().matches(binding)
    assert AclBindingFilter(TOPIC, "payments", PatternType.MATCH).matches(binding)
    assert not AclBindingFilter(TOPIC, "pay", LITERAL).matches(binding)
    assert AclBindingFilter(TOPIC, "pay", PatternType.ANY).matches(binding)
    assert not AclBindingFilter(principal="User:bob").matches(binding)
    assert AclBindingFilter(ResourceType.UNKNOWN).unknown_part() == "Unknown patternFilter."
    assert validate_new_acl(binding) is None
    assert validate_new_acl(acl(OP.ANY)) == "Invalid operation ANY"
    assert validate_new_acl(acl(OP.READ, pattern=PatternType.MATCH)) is not None
    assert validate_new_acl(acl(OP.READ, name="")) == "Resource name should not be empty"
    assert validate_new_acl(acl(OP.READ, principal="alice")) is not None


def test_acl_and_quota_records_through_the_image() -> None:
    first, second = acl(OP.READ), acl(OP.WRITE, DENY, name="p", pattern=PREFIXED)
    delta = MetadataDelta(MetadataImage())
    for i, binding in enumerate((first, second)):
        record = make_record("AccessControlEntryRecord", binding.to_record_data(bytes([i]) * 16))
        delta.replay(decode_record(record.encode()))
    entity = quota_entity({"user": "alice", "client-id": None})
    delta.replay(decode_record(quota_record(entity, "producer_byte_rate", 1024.0).encode()))
    image = delta.apply()
    assert sorted(image.acls.acls.values()) == sorted([first, second])
    assert image.client_quotas.entities[entity] == {"producer_byte_rate": 1024.0}
    # a snapshot of the image rebuilds it
    rebuilt = MetadataDelta(MetadataImage())
    for record in image.to_records():
        rebuilt.replay(record)
    assert rebuilt.apply().digest() == image.digest()
    # removal by id, and removing a quota key drops the entity
    delta = MetadataDelta(image)
    delta.replay(make_record("RemoveAccessControlEntryRecord", {"id": bytes([0]) * 16}))
    delta.replay(quota_record(entity, "producer_byte_rate", None))
    after = delta.apply()
    assert list(after.acls.acls.values()) == [second]
    assert not after.client_quotas.entities
    with pytest.raises(MetadataReplayError):
        MetadataDelta(after).replay(
            make_record("RemoveAccessControlEntryRecord", {"id": bytes([9]) * 16})
        )


# -- properties ---------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "ab", "abc", "b", "*"])
OPERATIONS = st.sampled_from([o for o in OP if o not in (OP.UNKNOWN, OP.ANY)])
ACLS = st.builds(
    StandardAcl,
    st.just(TOPIC),
    NAMES,
    st.sampled_from([LITERAL, PREFIXED]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", HOST, "10.0.0.2"]),
    OPERATIONS,
    st.sampled_from([ALLOW, DENY]),
)


def _reference(acls: list[StandardAcl], op: AclOperation, name: str, everyone: bool) -> bool:
    """The contract, written as plainly as possible."""
    applicable = [a for a in acls if a.applies_to(TOPIC, name)]

    def matches(a: StandardAcl) -> bool:
        if a.principal not in ("User:alice", "User:*") or a.host not in ("*", HOST):
            return False
        if a.operation in (OP.ALL, op):
            return True
        if a.permission != ALLOW:
            return False
        return (op == OP.DESCRIBE and a.operation in IMPLIES_DESCRIBE) or (
            op == OP.DESCRIBE_CONFIGS and a.operation in IMPLIES_DESCRIBE_CONFIGS
        )

    matching = [a for a in applicable if matches(a)]
    if any(a.permission == DENY for a in matching):
        return False
    if matching:
        return True
    return not applicable and everyone


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ACLS, max_size=8),
    OPERATIONS,
    st.sampled_from(["a", "ab", "abc", "b", "c"]),
    st.booleans(),
)
def test_property_matches_the_contract(
    acls: list[StandardAcl], op: AclOperation, name: str, everyone: bool
) -> None:
    auth = authorizer(*acls, allow_everyone_if_no_acl_found=everyone)
    assert allowed(auth, op, name) == _reference(acls, op, name, everyone)


@settings(max_examples=200, deadline=None)
@given(st.lists(ACLS, max_size=6), OPERATIONS, st.sampled_from(["a", "ab", "abc", "b"]))
def test_property_deny_wins(acls: list[StandardAcl], op: AclOperation, name: str) -> None:
    deny = acl(op, DENY, name=name, principal="User:*")
    auth = authorizer(*acls, deny, allow_everyone_if_no_acl_found=True)
    assert not allowed(auth, op, name)
    # ... except for a super user
    sup = authorizer(*acls, deny, super_users=frozenset({"User:alice"}))
    assert allowed(sup, op, name)


@settings(max_examples=200, deadline=None)
@given(st.lists(ACLS, max_size=6), st.sampled_from(sorted(IMPLIES_DESCRIBE)), NAMES)
def test_property_allow_implies_describe(
    acls: list[StandardAcl], implying: AclOperation, name: str
) -> None:
    without_deny = [a for a in acls if a.permission == ALLOW]
    auth = authorizer(*without_deny, acl(implying, name=name, principal="User:alice"))
    target = "abc" if name == "*" else name
    assert allowed(auth, OP.DESCRIBE, target)


def test_anonymous_is_a_user_principal() -> None:
    auth = authorizer(acl(OP.READ, principal="User:ANONYMOUS"))
    assert allowed(auth, OP.READ, principal=ANONYMOUS)
