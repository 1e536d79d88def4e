"""One listener's security at run time: its TLS context and who each new connection is.

Contract:
- Built once per listener at node start from :class:`ListenerSecurity`; building loads every
  key and certificate, so a bad store stops the node (a :class:`ConfigError`) before the port
  is opened. A listener whose protocol says TLS always has a context: there is no path that
  serves it in the clear.
- :meth:`ListenerRuntime.on_connect` runs when a connection is made (after the TLS handshake)
  and sets its session's principal: the mapped certificate DN on SSL (mTLS), ANONYMOUS
  otherwise. It returns a reason to close the connection (no mapping rule matched), or None.
- :attr:`ListenerRuntime.requires_sasl` tells the connection to accept only ApiVersions,
  SaslHandshake and SaslAuthenticate until SASL succeeds.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import Api
from sparklog.security.principal import SessionContext
from sparklog.security.sasl_server import (
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslSession,
    ScramLookup,
)
from sparklog.security.server_config import ListenerSecurity, listener_security
from sparklog.security.ssl_principal import NoMatchingRule, SslPrincipalMapper
from sparklog.security.tls import peer_principal, server_context

if TYPE_CHECKING:
    from sparklog.security.settings import ServerSettings


class ListenerRuntime:
    def __init__(self, security: ListenerSecurity, scram_lookup: ScramLookup | None = None) -> None:
        self.security = security
        self.scram_lookup = scram_lookup
        self.ssl_context: ssl.SSLContext | None = None
        self._mapper = SslPrincipalMapper("DEFAULT")
        self._plain_users = security.plain_users()
        if security.ssl is not None:
            self.ssl_context = server_context(security.ssl)
            try:
                self._mapper = SslPrincipalMapper(security.ssl.principal_mapping_rules)
            except ValueError as exc:
                from sparklog.config_keys import ConfigError

                raise ConfigError(f"listener {security.name}: {exc}") from None

    @property
    def protocol(self) -> str:
        return self.security.protocol

    @property
    def requires_sasl(self) -> bool:
        return self.security.uses_sasl

    def served_apis(self, apis: Mapping[int, Api]) -> Mapping[int, Api]:
        """``apis`` plus SaslHandshake and SaslAuthenticate on a SASL listener."""
        if not self.requires_sasl:
            return apis
        return {
            **apis,
            SASL_HANDSHAKE: API_BY_KEY[SASL_HANDSHAKE],
            SASL_AUTHENTICATE: API_BY_KEY[SASL_AUTHENTICATE],
        }

    def new_sasl(self, session: SessionContext) -> SaslSession | None:
        """A new connection's SASL state machine; None when the listener is not SASL."""
        if not self.requires_sasl:
            return None
        return SaslSession(
            session,
            self.security.mechanisms,
            self._plain_users,
            self.scram_lookup,
            self.security.reauth_ms,
        )

    def on_connect(self, session: SessionContext, transport: asyncio.BaseTransport) -> str | None:
        if self.protocol != "SSL":
            return None
        ssl_object = transport.get_extra_info("ssl_object")
        try:
            session.authenticated(peer_principal(ssl_object, self._mapper), None)
        except NoMatchingRule as exc:
            return f"SSL authentication failed: {exc}"
        return None


def listener_runtime(
    config: ServerSettings, name: str, scram_lookup: ScramLookup | None = None
) -> ListenerRuntime | None:
    """The runtime of listener ``name``; None for PLAINTEXT (nothing to add on the hot path)."""
    security = listener_security(config, name)
    if security.protocol == "PLAINTEXT":
        return None
    return ListenerRuntime(security, scram_lookup)
