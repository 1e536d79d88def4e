"""Kafka principals: who a connection is, as the authorizer and quotas see it.

Contract:
- A :class:`KafkaPrincipal` is Kafka's ``principalType:name`` pair, printed ``User:alice``.
  Equality and hashing use both parts, so ACL bindings and quota entities can key on it.
- Every connection carries one :class:`SessionContext` from accept to close. It starts as
  ``User:ANONYMOUS`` (PLAINTEXT, or SASL before authentication); the TLS layer sets the principal
  from the client certificate's DN and SASL replaces it on a successful authentication (or
  re-authentication, KIP-368). Nothing else writes it.
- The context also names the listener, its security protocol and the client's host, which is
  what Kafka's ``AuthorizableRequestContext`` offers an authorizer.
"""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"
ANONYMOUS_NAME = "ANONYMOUS"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``principal_type:name``; Kafka's built-in type is ``User``."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """Parse ``Type:name`` (as in ``super.users`` and ACL bindings); ValueError otherwise."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"expected a principal of the form Type:name, got {text!r}")
        return cls(principal_type, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, ANONYMOUS_NAME)


class SessionContext:
    """One connection's security state: principal, listener, protocol, client host.

    ``principal`` changes only through :meth:`authenticated`. ``authenticated_mechanism`` is
    the SASL mechanism used (None for PLAINTEXT/SSL), ``session_expiry_ms`` the monotonic
    time (ms) after which a SASL session must re-authenticate (KIP-368), None if never.
    """

    __slots__ = (
        "authenticated_mechanism",
        "client_host",
        "listener_name",
        "principal",
        "security_protocol",
        "session_expiry_ms",
    )

    def __init__(
        self,
        listener_name: str,
        security_protocol: str = "PLAINTEXT",
        client_host: str = "",
        principal: KafkaPrincipal = ANONYMOUS,
    ) -> None:
        self.principal = principal
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.client_host = client_host
        self.authenticated_mechanism: str | None = None
        self.session_expiry_ms: float | None = None

    def authenticated(
        self, principal: KafkaPrincipal, mechanism: str | None, expiry_ms: float | None = None
    ) -> None:
        self.principal = principal
        self.authenticated_mechanism = mechanism
        self.session_expiry_ms = expiry_ms

    def __repr__(self) -> str:
        return (
            f"SessionContext({self.principal}, listener={self.listener_name}, "
            f"protocol={self.security_protocol}, host={self.client_host})"
        )
