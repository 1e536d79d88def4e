"""DescribeUserScramCredentials (50, KIP-554) on a broker, from its metadata image.

Contract (Kafka's ScramImage.describe): no user list (null or empty) describes every user with
a credential; a listed user without one is RESOURCE_NOT_FOUND, a user listed twice
DUPLICATE_RESOURCE. Only mechanisms and iteration counts are returned, never salts or keys.
AlterUserScramCredentials (51) is forwarded to the controller.
"""

from __future__ import annotations

from sparklog.broker.context import BrokerContext
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import TypedRequest
from sparklog.protocol.message_types import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResponseResults,
    DescribeUserScramCredentialsResponseResultsCredentialInfos,
)
from sparklog.security.scram import MECHANISM_TYPES


async def handle_describe_user_scram_credentials(
    ctx: BrokerContext, request: TypedRequest[DescribeUserScramCredentialsRequest]
) -> DescribeUserScramCredentialsResponse:
    credentials = ctx.image.scram.credentials
    by_user: dict[str, list[DescribeUserScramCredentialsResponseResultsCredentialInfos]] = {}
    for (user, mechanism), credential in sorted(credentials.items()):
        by_user.setdefault(user, []).append(
            {"mechanism": MECHANISM_TYPES[mechanism], "iterations": credential.iterations}
        )
    asked = [u["name"] for u in request.body["users"] or ()]
    results: list[DescribeUserScramCredentialsResponseResults] = []
    if not asked:
        for user, infos in by_user.items():
            results.append(
                {"user": user, "error_code": 0, "error_message": None, "credential_infos": infos}
            )
    else:
        for user in dict.fromkeys(asked):
            if asked.count(user) > 1:
                code, message = (
                    ErrorCode.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {user}",
                )
            elif user not in by_user:
                code, message = (
                    ErrorCode.RESOURCE_NOT_FOUND,
                    f"Attempt to describe a user credential that does not exist: {user}",
                )
            else:
                results.append(
                    {
                        "user": user,
                        "error_code": 0,
                        "error_message": None,
                        "credential_infos": by_user[user],
                    }
                )
                continue
            results.append(
                {
                    "user": user,
                    "error_code": int(code),
                    "error_message": message,
                    "credential_infos": [],
                }
            )
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}
