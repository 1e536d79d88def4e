"""The client side of SASL for this node's own connections and tools (KIP-152 framing).

Contract: :func:`authenticate_blocking` runs SaslHandshake v1 then SaslAuthenticate rounds
over any ``request(api_name, body, version)`` callable (the blocking client's), and
:func:`authenticate_async` does the same over an awaitable one (the inter-broker client's).
PLAIN sends one token; SCRAM two, verifying the server's signature. A failure raises
:class:`SaslAuthenticationError` carrying the broker's error code and message, never the
password.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, cast

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import SaslAuthenticateResponse, SaslHandshakeResponse
from sparklog.security.scram import ScramClient, ScramError


class SaslAuthenticationError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# A step yields (api name, body, version) and receives the response body: the transport's
# plain dicts, of the API named (the steps narrow them to its response TypedDict).
_Step = Generator[tuple[str, dict[str, Any], int], dict[str, Any], None]


def _exchange(mechanism: str, username: str, password: str) -> _Step:
    response = cast("SaslHandshakeResponse", (yield "SaslHandshake", {"mechanism": mechanism}, 1))
    if response["error_code"] != ErrorCode.NONE:
        enabled = ", ".join(response.get("mechanisms") or [])
        raise SaslAuthenticationError(
            response["error_code"],
            f"SASL mechanism {mechanism} is not enabled on the broker (enabled: {enabled})",
        )

    def check(answer: dict[str, Any]) -> bytes:
        reply = cast("SaslAuthenticateResponse", answer)
        if reply["error_code"] != ErrorCode.NONE:
            raise SaslAuthenticationError(
                reply["error_code"], reply.get("error_message") or "SASL authentication failed"
            )
        return bytes(reply.get("auth_bytes") or b"")

    if mechanism == "PLAIN":
        token = b"\x00" + username.encode() + b"\x00" + password.encode()
        check((yield "SaslAuthenticate", {"auth_bytes": token}, 1))
        return
    scram = ScramClient(mechanism, username, password)
    server_first = check((yield "SaslAuthenticate", {"auth_bytes": scram.first()}, 1))
    try:
        client_final = scram.final(server_first)
    except ScramError as exc:
        raise SaslAuthenticationError(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc)) from None
    server_final = check((yield "SaslAuthenticate", {"auth_bytes": client_final}, 1))
    try:
        scram.verify(server_final)
    except ScramError as exc:
        raise SaslAuthenticationError(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc)) from None


def authenticate_blocking(
    request: Callable[[str, dict[str, Any], int], dict[str, Any]],
    mechanism: str,
    username: str,
    password: str,
) -> None:
    steps = _exchange(mechanism, username, password)
    try:
        call = next(steps)
        while True:
            call = steps.send(request(*call))
    except StopIteration:
        return


async def authenticate_async(
    request: Callable[[str, dict[str, Any], int], Awaitable[dict[str, Any]]],
    mechanism: str,
    username: str,
    password: str,
) -> None:
    steps = _exchange(mechanism, username, password)
    try:
        call = next(steps)
        while True:
            call = steps.send(await request(*call))
    except StopIteration:
        return
