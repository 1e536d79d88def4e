"""A SASL listener's per-connection authentication state machine (KIP-152, KIP-368); sans-IO.

Contract (Kafka's SaslServerAuthenticator):
- Until authenticated, a connection may send ApiVersions, SaslHandshake and SaslAuthenticate
  only; :meth:`SaslSession.gate` answers anything else with "close the connection" (Kafka's
  IllegalSaslStateException), so no request reaches the broker unauthenticated.
- SaslHandshake names an enabled mechanism (else UNSUPPORTED_SASL_MECHANISM and close);
  SaslAuthenticate then carries the tokens. PLAIN takes one token
  (``authzid NUL user NUL password``, checked against the listener's ``user_<name>`` JAAS
  entries); SCRAM takes two (checked against the credential lookup). A failure answers
  SASL_AUTHENTICATION_FAILED with Kafka's message and closes; a success sets the session's
  principal to ``User:<name>``.
- KIP-368: with ``connections.max.reauth.ms`` > 0 a successful SaslAuthenticate v1+ returns
  ``session_lifetime_ms`` and the session expires after it; a request other than a
  re-authentication (SaslHandshake, SaslAuthenticate) after expiry closes the connection. A
  re-authentication must use the same mechanism and yield the same principal.
- Messages never contain a password or token.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass

from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.message_types import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from sparklog.security.principal import KafkaPrincipal, SessionContext
from sparklog.security.scram import ScramCredential, ScramError, ScramServer

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
API_VERSIONS = 18
ALLOWED_BEFORE_AUTH = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})

ScramLookup = Callable[[str, str], ScramCredential | None]
"""(mechanism, user name) -> that user's credential, or None."""


@dataclass(frozen=True, slots=True)
class SaslReply:
    """A response body to send, and whether to close the connection after sending it."""

    body: SaslHandshakeResponse | SaslAuthenticateResponse | None
    close: bool = False
    reason: str = ""
    # True when this reply completes a (re-)authentication.
    authenticated: bool = False


def _plain_check(token: bytes, users: dict[str, str]) -> str:
    """The authenticated user name of a PLAIN token; ScramError (our auth failure) otherwise."""
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise ScramError("Invalid SASL/PLAIN response: expected 3 tokens")
    authzid, username_b, password_b = (p.decode("utf-8", "replace") for p in parts)
    if not username_b:
        raise ScramError("Authentication failed: username not specified")
    if not password_b:
        raise ScramError("Authentication failed: password not specified")
    expected = users.get(username_b)
    if expected is None or not hmac.compare_digest(expected.encode(), password_b.encode()):
        raise ScramError("Authentication failed: Invalid username or password")
    if authzid and authzid != username_b:
        raise ScramError(
            "Authentication failed: Client requested an authorization id that is different "
            "from username"
        )
    return username_b


class SaslSession:
    """The SASL state of one connection."""

    def __init__(
        self,
        session: SessionContext,
        mechanisms: tuple[str, ...],
        plain_users: dict[str, str],
        scram_lookup: ScramLookup | None,
        reauth_ms: int,
    ) -> None:
        self._session = session
        self._mechanisms = mechanisms
        self._plain_users = plain_users
        self._scram_lookup = scram_lookup
        self._reauth_ms = reauth_ms
        self._mechanism: str | None = None  # chosen by the current handshake
        self._scram: ScramServer | None = None
        self.authenticated = False

    def expired(self, now_ms: float) -> bool:
        expiry = self._session.session_expiry_ms
        return expiry is not None and now_ms >= expiry

    def gate(self, api_key: int, now_ms: float) -> str | None:
        """Why a request must close the connection instead of being served, or None."""
        if api_key in ALLOWED_BEFORE_AUTH:
            return None
        if not self.authenticated:
            return f"Unexpected Kafka request of type {api_key} during SASL handshake"
        if self.expired(now_ms):
            return "SASL session expired (connections.max.reauth.ms) without re-authentication"
        return None

    # -- SaslHandshake -------------------------------------------------------------------
    def handshake(self, body: SaslHandshakeRequest) -> SaslReply:
        mechanism = str(body.get("mechanism", ""))
        listed = list(self._mechanisms)
        if self._mechanism is not None and not self.authenticated:
            return SaslReply(
                {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": listed},
                close=True,
                reason="SaslHandshake repeated before authentication completed",
            )
        if mechanism not in self._mechanisms:
            return SaslReply(
                {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": listed},
                close=True,
                reason=f"unsupported SASL mechanism {mechanism[:64]!r}",
            )
        if self.authenticated and mechanism != self._session.authenticated_mechanism:
            return SaslReply(
                {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": listed},
                close=True,
                reason="re-authentication must use the original SASL mechanism",
            )
        self._mechanism = mechanism
        self._scram = None
        if mechanism.startswith("SCRAM-"):
            lookup = self._scram_lookup
            self._scram = ScramServer(
                mechanism, lambda user: lookup(mechanism, user) if lookup is not None else None
            )
        return SaslReply({"error_code": ErrorCode.NONE, "mechanisms": listed})

    # -- SaslAuthenticate ----------------------------------------------------------------
    def authenticate(self, body: SaslAuthenticateRequest, version: int, now_ms: float) -> SaslReply:
        mechanism = self._mechanism
        if mechanism is None:
            return SaslReply(
                self._auth_body(ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate before handshake"),
                close=True,
                reason="SaslAuthenticate before SaslHandshake",
            )
        token = bytes(body.get("auth_bytes") or b"")
        try:
            if self._scram is not None:
                reply = self._scram.respond(token)
                if not self._scram.complete:
                    return SaslReply(self._auth_body(ErrorCode.NONE, None, reply))
                username = self._scram.username
                assert username is not None
            else:
                username = _plain_check(token, self._plain_users)
                reply = b""
        except ScramError as exc:
            return self._failed(mechanism, str(exc))
        principal = KafkaPrincipal.user(username)
        if self.authenticated and principal != self._session.principal:
            return self._failed(mechanism, "re-authentication changed the principal")
        lifetime = self._reauth_ms
        self._session.authenticated(
            principal, mechanism, now_ms + lifetime if lifetime > 0 else None
        )
        self.authenticated = True
        self._mechanism = None
        self._scram = None
        out = self._auth_body(ErrorCode.NONE, None, reply)
        if version >= 1:
            out["session_lifetime_ms"] = lifetime
        return SaslReply(out, authenticated=True)

    def _failed(self, mechanism: str, detail: str) -> SaslReply:
        message = (
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}"
        )
        return SaslReply(
            self._auth_body(ErrorCode.SASL_AUTHENTICATION_FAILED, message),
            close=True,
            reason=f"SASL {mechanism} authentication failed: {detail}",
        )

    @staticmethod
    def _auth_body(code: int, message: str | None, token: bytes = b"") -> SaslAuthenticateResponse:
        return {
            "error_code": code,
            "error_message": message,
            "auth_bytes": token,
            "session_lifetime_ms": 0,
        }
