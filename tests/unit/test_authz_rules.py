"""Per-API authorization (sparklog.broker.authz) with a scripted handler: the codes Kafka's
KafkaApis answers for each kind of request, what reaches the handler, and what comes back."""

from __future__ import annotations

import asyncio
import logging
from types import MappingProxyType
from typing import Any

import pytest

from sparklog.broker.authz import RULES, authorized_call
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import Request, RequestHeader
from sparklog.protocol.messages import API_BY_KEY
from sparklog.security.acls import (
    CLUSTER_NAME,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from sparklog.security.authorizer import StandardAuthorizer
from sparklog.security.principal import KafkaPrincipal, SessionContext

Op = AclOperation
ALICE = "User:alice"


def allow(rtype: ResourceType, name: str, op: AclOperation) -> StandardAcl:
    return StandardAcl(rtype, name, PatternType.LITERAL, ALICE, "*", op, AclPermissionType.ALLOW)


def run(
    key: int,
    body: dict[str, Any],
    *acls: StandardAcl,
    version: int | None = None,
    answer: dict[str, Any] | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """(response, the bodies the handler saw)."""
    mapping = MappingProxyType({bytes([i]) * 16: a for i, a in enumerate(acls)})
    authorizer = StandardAuthorizer(lambda: mapping)
    session = SessionContext("PLAINTEXT", client_host="127.0.0.1")
    session.principal = KafkaPrincipal.parse(ALICE)
    api = API_BY_KEY[key]
    request = Request(RequestHeader(key, version or api.max_version, 1, "c"), api, body)
    seen: list[dict[str, Any]] = []

    async def serve(allowed: Request) -> dict[str, Any] | None:
        seen.append(allowed.body)
        if answer is not None:
            return answer
        return {"throttle_time_ms": 0, "error_code": 0, "topics": [], "responses": []}

    response = asyncio.run(authorized_call(authorizer, session, request, serve, lambda _: None))
    return response, seen


def codes(response: dict[str, Any], topics: str, partitions: str) -> dict[str, list[int]]:
    return {
        t.get("name") or t.get("topic"): [p["error_code"] for p in t[partitions]]
        for t in response[topics]
    }


def test_refusals_are_audited_filters_are_not(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sparklog.authorizer")
    run(11, {"group_id": "g"})
    assert caplog.messages == [
        "Principal = User:alice is Denied operation = READ from host = 127.0.0.1 on resource = "
        "Group:LITERAL:g for request = JoinGroup"
    ]
    caplog.clear()
    run(16, {}, answer={"groups": [{"group_id": "g"}]})
    assert caplog.messages == []


def test_produce_per_topic_and_transactional_id() -> None:
    body = {
        "transactional_id": None,
        "acks": -1,
        "topic_data": [
            {"name": "ok", "partition_data": [{"index": 0, "records": b""}]},
            {"name": "no", "partition_data": [{"index": 0}, {"index": 1}]},
        ],
    }
    response, seen = run(0, body, allow(ResourceType.TOPIC, "ok", Op.WRITE))
    assert [t["name"] for t in seen[0]["topic_data"]] == ["ok"]
    assert codes(response, "responses", "partition_responses") == {"no": [29, 29]}
    txn = {**body, "transactional_id": "t"}
    response, seen = run(0, txn, allow(ResourceType.TOPIC, "ok", Op.WRITE))
    assert not seen
    assert codes(response, "responses", "partition_responses") == {"ok": [53], "no": [53, 53]}
    assert run(0, {**body, "acks": 0})[0] is None


def test_fetch_replica_needs_cluster_action() -> None:
    body = {"replica_id": -1, "replica_state": {"replica_id": 2}, "topics": []}
    response, seen = run(1, body)
    assert response["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and not seen
    cluster = allow(ResourceType.CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)
    assert run(1, body, cluster)[1]


def test_consumer_fetch_denied_partitions_have_empty_records() -> None:
    body = {"replica_id": -1, "topics": [{"topic": "t", "partitions": [{"partition": 3}]}]}
    response, seen = run(1, body)
    partition = response["responses"][0]["partitions"][0]
    assert partition["error_code"] == 29 and partition["records"] == b""
    assert partition["partition_index"] == 3 and not seen


def test_incremental_fetch_rechecks_session_partitions() -> None:
    cached = {"topic": "was-allowed", "partitions": [{"partition_index": 0, "records": b"x"}]}
    answer = {"error_code": 0, "session_id": 5, "responses": [cached]}
    body = {"replica_id": -1, "session_epoch": 3, "topics": []}
    response, seen = run(1, body, answer=answer)
    assert seen == [body]
    partition = response["responses"][0]["partitions"][0]
    assert partition["error_code"] == 29 and partition["records"] == b""


def test_metadata_hides_and_names() -> None:
    async_body = {"topics": [{"name": "secret"}, {"name": "mine"}]}
    response, seen = run(3, async_body, allow(ResourceType.TOPIC, "mine", Op.READ))
    assert seen[0]["topics"] == [{"name": "mine"}]
    assert response["topics"] == [
        {
            "error_code": 29,
            "name": "secret",
            "topic_id": bytes(16),
            "is_internal": False,
            "partitions": [],
        }
    ]


def test_groups() -> None:
    join = {"group_id": "g"}
    assert run(11, join)[0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert run(11, join, allow(ResourceType.GROUP, "g", Op.READ))[1] == [join]
    commit = {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}
    assert codes(run(8, commit)[0], "topics", "partitions") == {"t": [30]}
    group_only = run(8, commit, allow(ResourceType.GROUP, "g", Op.READ))[0]
    assert codes(group_only, "topics", "partitions") == {"t": [29]}
    described = run(15, {"groups": ["g", "h"]}, allow(ResourceType.GROUP, "g", Op.DESCRIBE))
    assert described[1] == [{"groups": ["g"]}]
    deleted = run(42, {"groups_names": ["g"]}, allow(ResourceType.GROUP, "g", Op.READ))[0]
    assert deleted["results"][0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    coordinator = run(10, {"key_type": 0, "coordinator_keys": ["g"]}, version=4)[0]
    assert coordinator["coordinators"][0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_transactions_and_idempotence() -> None:
    init = {"transactional_id": "t"}
    assert run(22, init)[0]["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert run(22, init, allow(ResourceType.TRANSACTIONAL_ID, "t", Op.WRITE))[1]
    idempotent = {"transactional_id": None}
    refused = run(22, idempotent)[0]
    assert refused["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert run(22, idempotent, allow(ResourceType.TOPIC, "any", Op.WRITE))[1]
    offsets = {"transactional_id": "t", "group_id": "g"}
    txn_only = run(25, offsets, allow(ResourceType.TRANSACTIONAL_ID, "t", Op.WRITE))[0]
    assert txn_only["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    add = {
        "v3_and_below_transactional_id": "t",
        "v3_and_below_topics": [{"name": "a", "partitions": [0]}, {"name": "b", "partitions": [1]}],
    }
    response = run(24, add, allow(ResourceType.TRANSACTIONAL_ID, "t", Op.WRITE),
                   allow(ResourceType.TOPIC, "a", Op.WRITE), version=3)[0]  # fmt: skip
    results = {
        t["name"]: t["results_by_partition"][0]["partition_error_code"]
        for t in response["results_by_topic_v3_and_below"]
    }
    assert results == {"a": ErrorCode.OPERATION_NOT_ATTEMPTED, "b": 29}


def test_share_groups_and_scram() -> None:
    fetch = {"group_id": "s", "topics": []}
    assert run(78, fetch)[0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert run(78, fetch, allow(ResourceType.GROUP, "s", Op.READ))[1] == [fetch]
    scram = {"deletions": [{"name": "bob"}], "upsertions": [{"name": "carol"}]}
    results = run(51, scram)[0]["results"]
    assert [(r["user"], r["error_code"]) for r in results] == [("bob", 31), ("carol", 31)]
    state = {"group_id": "s", "topics": [{"topic_id": bytes(16), "partitions": [{"partition": 0}]}]}
    refused = run(84, state)[0]["results"][0]["partitions"][0]
    assert refused["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_admin_requests() -> None:
    create = {"topics": [{"name": "a"}, {"name": "b"}]}
    response, seen = run(19, create, allow(ResourceType.TOPIC, "a", Op.CREATE))
    assert [t["name"] for t in seen[0]["topics"]] == ["a"]
    assert response["topics"][-1]["error_code"] == 29
    configs = {"resources": [{"resource_type": 4, "resource_name": "1"}]}
    denied = run(44, configs)[0]
    assert denied["responses"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elect = run(43, {"topic_partitions": []})[0]
    assert elect["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # an API without a rule needs ALTER on the cluster
    unknown_rule = min(k for k in API_BY_KEY if k not in RULES)
    refused = run(unknown_rule, {})
    assert not refused[1]
    assert run(unknown_rule, {}, allow(ResourceType.CLUSTER, CLUSTER_NAME, Op.ALTER))[1]


def test_authorized_operations_bit_fields() -> None:
    body = {
        "topics": [{"name": "t"}],
        "include_topic_authorized_operations": True,
        "include_cluster_authorized_operations": True,
    }
    answer = {"topics": [{"name": "t", "error_code": 0, "partitions": []}]}
    response, _ = run(3, body, allow(ResourceType.TOPIC, "t", Op.WRITE), version=10, answer=answer)
    # WRITE, and DESCRIBE which WRITE implies
    assert response["topics"][0]["topic_authorized_operations"] == (1 << 4) | (1 << 8)
    assert response["cluster_authorized_operations"] == 0
    groups = run(
        15,
        {"groups": ["g"], "include_authorized_operations": True},
        allow(ResourceType.GROUP, "g", Op.ALL),
        answer={"groups": [{"group_id": "g", "error_code": 0}]},
    )[0]
    assert groups["groups"][0]["authorized_operations"] == sum(
        1 << int(op) for op in (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS,
                                Op.ALTER_CONFIGS)
    )  # fmt: skip


def test_listed_resources_partly_denied() -> None:
    """The handler sees only the allowed ids; the refused ones are added to its answer, and a
    request with nothing allowed is answered without the handler."""
    txn_ids = {"transactional_ids": ["a", "b"]}
    allowed = allow(ResourceType.TRANSACTIONAL_ID, "a", Op.DESCRIBE)
    answer = {"transaction_states": [{"transactional_id": "a", "error_code": 0}]}
    response, seen = run(65, txn_ids, allowed, answer=answer)
    assert seen == [{"transactional_ids": ["a"]}]
    states = [(s["transactional_id"], s["error_code"]) for s in response["transaction_states"]]
    assert states == [("a", 0), ("b", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)]
    response, seen = run(65, txn_ids)
    assert not seen and len(response["transaction_states"]) == 2
    groups = {"groups": [{"group_id": "g"}, {"group_id": "h"}]}
    response, seen = run(90, groups, allow(ResourceType.GROUP, "h", Op.DESCRIBE), answer={})
    assert seen == [{"groups": [{"group_id": "h"}]}]
    assert response["groups"] == [
        {"group_id": "g", "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    ]
    configs = {"resources": [{"resource_type": 2, "resource_name": n} for n in ("t", "u")]}
    response, seen = run(32, configs, allow(ResourceType.TOPIC, "u", Op.DESCRIBE_CONFIGS))
    assert [r["resource_name"] for r in seen[0]["resources"]] == ["u"]
    assert response["results"][-1]["resource_name"] == "t"
    assert response["results"][-1]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
