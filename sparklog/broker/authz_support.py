"""What the per-API authorization rules share (:mod:`sparklog.broker.authz`).

- :class:`Check` asks the authorizer for one principal and client host, resolving topic ids to
  names through the image (an unknown id is left for the handler to answer UNKNOWN_TOPIC_ID).
- :func:`per_topic` is the common "topics with partitions" shape: unauthorized topics leave the
  request and come back in the response with the denial code on each of their partitions.
- :func:`error_response` is a whole request refused with one code, in the place a client reads.
- :class:`ClusterRule` is the rule of an API whose whole request needs one operation on the
  cluster.
- :func:`serve_allowed` is the common "list of resources" shape: the handler serves the
  allowed ones and the denied ones come back as entries of the response list.
- Types: a rule for one API declares its request's and response's TypedDicts
  (:mod:`sparklog.protocol.message_types`); :data:`Serve` answers the plain response dict of
  whichever API the rule table dispatched to, so a typed rule narrows it with ``cast``. The
  shape-generic helpers (:func:`per_topic`, :func:`error_response`, :func:`serve_allowed`)
  address fields by key names their callers pass, which no static type can check: they alone
  use :data:`ShapeBody`.
- A refusal the client asked for (not a filter such as Metadata's topic list) is logged at INFO
  on the ``sparklog.authorizer`` logger in the shape of Kafka's ``kafka.authorizer.logger``:
  ``Principal = User:bob is Denied operation = WRITE from host = 10.0.0.7 on resource =
  Topic:LITERAL:orders for request = Produce``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar, cast

from sparklog.controller.apis import error_body
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from sparklog.security.authorizer import StandardAuthorizer
from sparklog.security.principal import KafkaPrincipal

# A response body of the API a rule was dispatched for (None: no response, acks=0 Produce).
Served = Mapping[str, object] | None
# Serves a (possibly filtered) request: its handler's response, the plain dict it is at run time.
Serve = Callable[[TypedRequest[Any]], Awaitable[Served]]
# A body whose message is known only at run time, read and written by caller-given key names.
ShapeBody = dict[str, Any]
audit_log = logging.getLogger("sparklog.authorizer")
_RESOURCE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
}

# The operations each resource type supports (Kafka's AclEntry.supportedOperations), for the
# authorized-operations bit fields of KIP-430.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
}
T = TypeVar("T")
_NO_ID = bytes(16)
_CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class Rule(Protocol):
    """One API's authorization; ``request`` is that API's ``TypedRequest[<Api>Request]``."""

    async def __call__(self, check: Check, request: TypedRequest[Any], serve: Serve) -> Served: ...


@dataclass(frozen=True, slots=True)
class Check:
    authorizer: StandardAuthorizer
    principal: KafkaPrincipal
    host: str
    topic_name: Callable[[bytes], str | None]
    request_name: str = ""

    def allowed(
        self,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str | None,
        *,
        quiet: bool = False,
    ) -> bool:
        resource = name or CLUSTER_NAME
        if self.authorizer.authorize(self.principal, self.host, operation, resource_type, resource):
            return True
        if not quiet:
            audit_log.info(
                "Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s"
                " for request = %s",
                self.principal,
                operation.name,
                self.host,
                _RESOURCE_NAMES.get(resource_type, resource_type.name),
                resource,
                self.request_name,
            )
        return False

    def cluster(self, operation: AclOperation, *, quiet: bool = False) -> bool:
        return self.allowed(operation, ResourceType.CLUSTER, CLUSTER_NAME, quiet=quiet)

    def by_type(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        return self.authorizer.authorize_by_resource_type(
            self.principal, self.host, operation, resource_type
        )

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """KIP-430's bit field: bit ``op`` set for each supported operation allowed."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS[resource_type]:
            if self.allowed(operation, resource_type, name, quiet=True):
                bits |= 1 << int(operation)
        return bits

    def topic(
        self,
        operation: AclOperation,
        entry: Mapping[str, object],
        name_key: str = "name",
        *,
        quiet: bool = False,
    ) -> bool:
        """``entry`` names its topic by ``name_key`` (a str) or by ``topic_id`` (16 bytes)."""
        name = cast("str | None", entry.get(name_key))
        if not name:
            topic_id = bytes(cast("bytes", entry.get("topic_id") or _NO_ID))
            if topic_id == _NO_ID:
                return True
            name = self.topic_name(topic_id)
            if name is None:
                return True
        return self.allowed(operation, ResourceType.TOPIC, name, quiet=quiet)


@dataclass(frozen=True, slots=True)
class ClusterRule:
    """The whole request needs ``operation`` on the cluster. Refused, it is answered with
    :func:`error_response`, or, given ``listed``, with CLUSTER_AUTHORIZATION_FAILED at the top
    level, no error message and an empty ``listed`` list (DescribeLogDirs,
    DescribeUserScramCredentials, a replica's Fetch: Kafka's answers)."""

    operation: AclOperation
    listed: str | None = None

    async def __call__(self, check: Check, request: TypedRequest[Any], serve: Serve) -> Served:
        if check.cluster(self.operation):
            return await serve(request)
        if self.listed is None:
            return error_response(request, _CLUSTER_DENIED)
        return {"throttle_time_ms": 0, "error_code": int(_CLUSTER_DENIED), self.listed: []}


def split(items: list[T], ok: Callable[[T], bool]) -> tuple[list[T], list[T]]:
    allowed: list[T] = []
    denied: list[T] = []
    for item in items:
        (allowed if ok(item) else denied).append(item)
    return allowed, denied


def error_response(request: TypedRequest[Any], code: ErrorCode) -> Mapping[str, object]:
    """The whole request refused with ``code``; ``request`` may be of any API."""
    body: ShapeBody = request.body
    if request.api.key == 27:  # WriteTxnMarkers: per partition
        return {
            "markers": [
                {
                    "producer_id": m["producer_id"],
                    "topics": [
                        {
                            "name": t["name"],
                            "partitions": [
                                {"partition_index": p, "error_code": int(code)}
                                for p in t["partition_indexes"]
                            ],
                        }
                        for t in m["topics"]
                    ],
                }
                for m in body.get("markers") or ()
            ]
        }
    return error_body(request.api.key, body, code, "")


async def serve_allowed(
    request: TypedRequest[Any],
    serve: Serve,
    allowed: Mapping[str, list[Any]],
    rsp_key: str,
    denied: Sequence[Mapping[str, object]],
) -> ShapeBody | None:
    """Shape-generic: the handler serves ``request`` with its lists replaced by ``allowed``
    (request key -> the items the principal may touch), then each of ``denied`` (the response
    entries of the refused items) is added to the response's ``rsp_key`` list. When items were
    refused and none is allowed, the handler is not asked: the answer is the refusals alone."""
    response: ShapeBody | None
    if any(allowed.values()) or not denied:
        served = await serve(replace(request, body={**request.body, **allowed}))
        response = cast("ShapeBody | None", served)
    else:
        response = {"throttle_time_ms": 0, rsp_key: []}
    if response is None:
        return None
    if denied:
        response.setdefault(rsp_key, []).extend(denied)
    return response


async def per_topic(
    check: Check,
    request: TypedRequest[Any],
    serve: Serve,
    operation: AclOperation,
    *,
    req_topics: str = "topics",
    name_key: str = "name",
    req_partitions: str,
    req_index: str | None,
    rsp_topics: str = "topics",
    rsp_name: str = "name",
    rsp_partitions: str = "partitions",
    rsp_index: str,
    extra: Mapping[str, object],
    code: ErrorCode = ErrorCode.TOPIC_AUTHORIZATION_FAILED,
) -> Served:
    """Shape-generic: the request's and response's fields are the key names passed."""
    body: ShapeBody = request.body
    topics: list[ShapeBody] = list(body.get(req_topics) or ())
    allowed, denied = split(topics, lambda t: check.topic(operation, t, name_key))
    if not denied:
        return await serve(request)
    response: ShapeBody | None
    if allowed:
        served = await serve(replace(request, body={**body, req_topics: allowed}))
        response = cast("ShapeBody | None", served)
    else:
        response = {"throttle_time_ms": 0, "error_code": 0, rsp_topics: []}
        if request.api.key == 0 and body.get("acks", -1) == 0:
            response = None
    if response is None:
        return None
    for topic in denied:
        partitions = []
        for partition in topic.get(req_partitions) or ():
            index = partition if req_index is None else partition[req_index]
            partitions.append({rsp_index: index, "error_code": int(code), **extra})
        response.setdefault(rsp_topics, []).append(
            {
                rsp_name: topic.get(name_key) or "",
                "topic_id": topic.get("topic_id") or _NO_ID,
                rsp_partitions: partitions,
            }
        )
    return response
