"""The broker's ACL and client-quota APIs: reads answered from the image, writes forwarded.

- DescribeAcls (29) lists the bindings of the latest image that the filter selects, grouped by
  resource pattern (Kafka's ``AclApis.handleDescribeAcls``); CreateAcls (30) and DeleteAcls
  (31) go to the controller, the only writer of metadata. All three answer SECURITY_DISABLED
  ("No Authorizer is configured.") when ``authorizer.class.name`` is unset, as Kafka does.
- DescribeClientQuotas (48) answers from the image's client quotas with Kafka's filter rules
  (``ClientQuotasImage.describe``: exact / default / any-specified components, ``strict``);
  AlterClientQuotas (49) goes to the controller.

Who may call them (CLUSTER DESCRIBE / ALTER, DESCRIBE_CONFIGS / ALTER_CONFIGS) is checked in
:mod:`sparklog.broker.authz` before these run.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparklog.broker.admin import forward_to_controller
from sparklog.broker.context import BrokerContext
from sparklog.controller.apis import error_body
from sparklog.metadata.security_image import ClientQuotasImage
from sparklog.protocol.errors import ErrorCode, KafkaApiError
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeAclsResponseResources,
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponents,
    DescribeClientQuotasResponse,
    DescribeClientQuotasResponseEntries,
)
from sparklog.security.acls import AclBindingFilter, StandardAcl

NO_AUTHORIZER = "No Authorizer is configured."
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


async def handle_describe_acls(
    ctx: BrokerContext, request: TypedRequest[DescribeAclsRequest]
) -> DescribeAclsResponse:
    if ctx.authorizer is None:
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.SECURITY_DISABLED),
            "error_message": NO_AUTHORIZER,
            "resources": [],
        }
    binding_filter = AclBindingFilter.from_request(request.body)
    problem = binding_filter.unknown_part()
    if problem is not None:
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.INVALID_REQUEST),
            "error_message": problem,
            "resources": [],
        }
    grouped: dict[tuple[int, str, int], list[StandardAcl]] = {}
    for acl in ctx.image.acls.acls.values():
        if binding_filter.matches(acl):
            key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
            grouped.setdefault(key, []).append(acl)
    resources: list[DescribeAclsResponseResources] = [
        {
            "resource_type": rtype,
            "resource_name": name,
            "pattern_type": pattern,
            "acls": [
                {
                    "principal": a.principal,
                    "host": a.host,
                    "operation": int(a.operation),
                    "permission_type": int(a.permission),
                }
                for a in sorted(acls)
            ],
        }
        for (rtype, name, pattern), acls in sorted(grouped.items())
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": resources}


async def handle_acl_write(
    ctx: BrokerContext, request: TypedRequest[CreateAclsRequest | DeleteAclsRequest]
) -> Mapping[str, object]:
    """CreateAcls / DeleteAcls: SECURITY_DISABLED without an authorizer, else forwarded."""
    if ctx.authorizer is None:
        return error_body(request.api.key, request.body, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    return await forward_to_controller(ctx, request)


def _quota_filter(
    components: list[DescribeClientQuotasRequestComponents],
) -> tuple[dict[str, str | None], set[str]]:
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for component in components:
        entity_type, match = component["entity_type"], component["match"]
        if not entity_type:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in typed:
            raise KafkaApiError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {entity_type} cannot appear more than once in the filter.",
            )
        if entity_type not in ("user", "client-id", "ip"):
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}"
            )
        match_type = component["match_type"]
        if match_type == MATCH_EXACT:
            if match is None:
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[entity_type] = match
        elif match_type in (MATCH_DEFAULT, MATCH_SPECIFIED):
            if match is not None:
                name = (
                    "MATCH_TYPE_DEFAULT" if match_type == MATCH_DEFAULT else "MATCH_TYPE_SPECIFIED"
                )
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST,
                    f"Request specified {name}, but also specified a match string.",
                )
            if match_type == MATCH_DEFAULT:
                exact[entity_type] = None
            else:
                typed.add(entity_type)
        else:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
    if ("ip" in exact or "ip" in typed) and len(exact) + len(typed) > 1:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        )
    return exact, typed


def describe_client_quotas(
    quotas: ClientQuotasImage, request: DescribeClientQuotasRequest
) -> list[DescribeClientQuotasResponseEntries]:
    exact, typed = _quota_filter(list(request["components"]))
    entries: list[DescribeClientQuotasResponseEntries] = []
    for entity, values in quotas.entities.items():
        parts = dict(entity)
        if request["strict"] and len(parts) != len(exact) + len(typed):
            continue
        if any(t not in parts or parts[t] != name for t, name in exact.items()):
            continue
        if any(t not in parts for t in typed):
            continue
        entries.append(
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
            }
        )
    return entries


async def handle_describe_client_quotas(
    ctx: BrokerContext, request: TypedRequest[DescribeClientQuotasRequest]
) -> DescribeClientQuotasResponse:
    try:
        entries: list[DescribeClientQuotasResponseEntries] | None = describe_client_quotas(
            ctx.image.client_quotas, request.body
        )
        code, message = 0, None
    except KafkaApiError as exc:
        entries, code, message = None, int(exc.code), exc.message
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "entries": entries,
    }
