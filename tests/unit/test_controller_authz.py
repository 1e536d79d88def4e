"""The controller listener's authorization (ControllerApis with an authorizer): the quorum's and
the brokers' requests need CLUSTER_ACTION, DescribeQuorum DESCRIBE, voter changes ALTER; a
refusal is CLUSTER_AUTHORIZATION_FAILED where the client reads it; ApiVersions always passes."""

from __future__ import annotations

import asyncio
from types import MappingProxyType
from typing import Any

from sparklog.controller.apis import ControllerApis
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


class Conn:
    def __init__(self, principal: str) -> None:
        self.session = SessionContext("CONTROLLER", client_host="127.0.0.1")
        self.session.principal = KafkaPrincipal.parse(principal)


def _apis(*acls: StandardAcl) -> tuple[ControllerApis, list[int]]:
    answered: list[int] = []

    async def raft(request: Request, conn: Any) -> dict[str, Any]:
        answered.append(request.header.api_key)
        return {"error_code": 0}

    apis = ControllerApis(raft, None, "cluster")
    mapping = MappingProxyType({bytes([i]) * 16: a for i, a in enumerate(acls)})
    apis.authorizer = StandardAuthorizer(lambda: mapping)
    return apis, answered


def _call(apis: ControllerApis, key: int, principal: str, body: dict[str, Any]) -> Any:
    api = API_BY_KEY[key]
    request = Request(RequestHeader(key, api.max_version, 1, "c"), api, body)
    return asyncio.run(apis(request, Conn(principal)))


def _cluster_acl(principal: str, op: AclOperation) -> StandardAcl:
    return StandardAcl(
        ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, principal, "*", op,
        AclPermissionType.ALLOW,
    )  # fmt: skip


def test_controller_requests_need_cluster_action() -> None:
    apis, answered = _apis(_cluster_acl("User:broker", AclOperation.CLUSTER_ACTION))
    vote = {"cluster_id": "cluster", "voter_id": 1, "topics": []}
    refused = _call(apis, 52, "User:ANONYMOUS", vote)
    assert refused["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert answered == []
    assert _call(apis, 52, "User:broker", vote)["error_code"] == 0
    assert _call(apis, 18, "User:ANONYMOUS", {})["error_code"] == 0
    heartbeat = _call(apis, 63, "User:ANONYMOUS", {"broker_id": 1})
    assert heartbeat["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    create = _call(apis, 19, "User:ANONYMOUS", {"topics": [{"name": "t"}]})
    assert create["topics"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # DescribeQuorum needs DESCRIBE, which CLUSTER_ACTION does not imply
    quorum = _call(apis, 55, "User:broker", {"topics": []})
    assert quorum["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_describe_quorum_with_describe() -> None:
    apis, answered = _apis(_cluster_acl("User:ops", AclOperation.DESCRIBE))
    assert _call(apis, 55, "User:ops", {"topics": []})["error_code"] == 0
    assert answered == [55]
