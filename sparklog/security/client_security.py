"""How this node (or a tool) connects to a secured Kafka listener as a client.

Contract:
- :class:`ClientSecurity` bundles a security protocol, the TLS context (SSL, SASL_SSL) and the
  SASL login (SASL_*): mechanism, user name and password (kept out of ``repr``).
  :meth:`ClientSecurity.authenticate` runs SASL over an awaitable request function,
  :meth:`authenticate_blocking` over a blocking one; both raise
  :class:`~sparklog.security.sasl_client.SaslAuthenticationError` on refusal.
- :func:`inter_broker_security` / :func:`controller_security` build what a node uses on
  ``inter.broker.listener.name`` with ``sasl.mechanism.inter.broker.protocol`` and on the first
  of ``controller.listener.names`` with ``sasl.mechanism.controller.protocol``: the listener's
  own ``ssl.*`` settings (truststore; keystore when the peer asks for a certificate) and the
  ``username``/``password`` of that listener's ``<mechanism>.sasl.jaas.config``, as Kafka
  does. PLAINTEXT gives None: nothing changes on the hot path. Results are cached per config.
- :func:`client_security_from_properties` reads Kafka client settings (``security.protocol``,
  ``sasl.mechanism``, ``sasl.jaas.config`` or ``sasl.username``/``sasl.password``, ``ssl.*``
  Java-client keys, plus librdkafka's ``ssl.ca.location``, ``ssl.certificate.location`` and
  ``ssl.key.location``) for the CLI's ``--command-config`` and the connector. Errors are
  ``ValueError`` naming the key, never a value.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sparklog.config_keys import DEFS, ConfigError
from sparklog.security.jaas import parse_jaas_config
from sparklog.security.sasl_client import authenticate_async, authenticate_blocking
from sparklog.security.server_config import (
    SASL_PROTOCOLS,
    SSL_PROTOCOLS,
    STORE_TYPES,
    SUPPORTED_MECHANISMS,
    SslSettings,
    listener_security,
    ssl_settings_from,
)
from sparklog.security.tls import client_context

if TYPE_CHECKING:
    from sparklog.security.settings import ServerSettings

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    # The TLS settings the context was built from (the gRPC reader needs the PEM material).
    tls: SslSettings | None = field(default=None, repr=False)

    @property
    def uses_sasl(self) -> bool:
        return self.mechanism is not None

    async def authenticate(
        self, request: Callable[[str, dict[str, Any], int], Awaitable[dict[str, Any]]]
    ) -> None:
        if self.mechanism is None:
            return
        await authenticate_async(request, self.mechanism, self.username or "", self.password or "")

    def authenticate_blocking(
        self, request: Callable[[str, dict[str, Any], int], dict[str, Any]]
    ) -> None:
        if self.mechanism is None:
            return
        authenticate_blocking(request, self.mechanism, self.username or "", self.password or "")


def _node_security(
    config: ServerSettings, listener: str, mechanism_key: str
) -> ClientSecurity | None:
    security = listener_security(config, listener)
    if security.protocol == "PLAINTEXT":
        return None
    context = None
    if security.ssl is not None:
        settings = security.ssl
        if settings.client_auth == "none" and security.protocol == "SASL_SSL":
            # Our certificate is only needed where the peer asks for one.
            settings = replace(settings, keystore_location=None, keystore_certificate_chain=None)
        context = client_context(settings)
    if security.protocol not in SASL_PROTOCOLS:
        return ClientSecurity(security.protocol, context)
    mechanism = str(config.get(mechanism_key)).upper()
    login = security.client_login(mechanism)
    if login is None:
        raise ConfigError(
            f"{mechanism_key}={mechanism}: listener.name.{listener.lower()}."
            f"{mechanism.lower()}.sasl.jaas.config must give username and password"
        )
    return ClientSecurity(security.protocol, context, mechanism, login[0], login[1])


@lru_cache(maxsize=16)
def inter_broker_security(config: ServerSettings) -> ClientSecurity | None:
    return _node_security(
        config, config.inter_broker_listener_name, "sasl.mechanism.inter.broker.protocol"
    )


@lru_cache(maxsize=16)
def controller_security(config: ServerSettings) -> ClientSecurity | None:
    names = config.controller_listener_names
    if not names:
        return None
    return _node_security(config, names[0], "sasl.mechanism.controller.protocol")


_LIBRDKAFKA_SSL = {
    "ssl.ca.location": "ssl.truststore.location",
    "ssl.certificate.location": "ssl.keystore.certificate.chain",
    "ssl.key.location": "ssl.keystore.key",
}


def client_security_from_properties(props: Mapping[str, str]) -> ClientSecurity | None:
    """Kafka client settings -> ClientSecurity (None for PLAINTEXT)."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ValueError(f"security.protocol must be one of {', '.join(PROTOCOLS)}")
    if protocol == "PLAINTEXT":
        return None
    context = None
    tls = None
    if protocol in SSL_PROTOCOLS:
        tls = _client_ssl_settings(props)
        context = client_context(tls)
    if protocol not in SASL_PROTOCOLS:
        return ClientSecurity(protocol, context, tls=tls)
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ValueError(
            f"sasl.mechanism {mechanism} is not supported (use {', '.join(SUPPORTED_MECHANISMS)})"
        )
    username, password = props.get("sasl.username"), props.get("sasl.password")
    if "sasl.jaas.config" in props:
        try:
            module = parse_jaas_config(props["sasl.jaas.config"])
        except ValueError as exc:
            raise ValueError(f"sasl.jaas.config: {exc}") from None
        username = module.options.get("username", username)
        password = module.options.get("password", password)
    if not username or password is None:
        raise ValueError(
            'SASL needs a user name and password: sasl.jaas.config with username="..." '
            'password="..." (or sasl.username and sasl.password)'
        )
    return ClientSecurity(protocol, context, mechanism, username, password, tls)


def _client_ssl_settings(props: Mapping[str, str]) -> SslSettings:
    merged = dict(props)
    for librdkafka, java in _LIBRDKAFKA_SSL.items():
        if librdkafka in props and java not in props:
            path = props[librdkafka]
            if java == "ssl.truststore.location":
                merged[java] = path
                merged.setdefault("ssl.truststore.type", "PEM")
            else:
                try:
                    with open(path, encoding="utf-8") as file:
                        merged[java] = file.read()
                except OSError as exc:
                    raise ValueError(f"cannot read {librdkafka} {path}: {exc.strerror}") from None
                merged.setdefault("ssl.keystore.type", "PEM")
    if merged.get("ssl.keystore.location", "").endswith(".pem"):
        merged.setdefault("ssl.keystore.type", "PEM")
    if merged.get("ssl.truststore.location", "").endswith((".pem", ".crt")):
        merged.setdefault("ssl.truststore.type", "PEM")

    def get(key: str) -> Any:
        raw = merged.get(key)
        definition = DEFS[key]
        if raw is None:
            return definition.default
        try:
            return definition.parse(raw)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    settings = ssl_settings_from(get)
    for key, kind, used in (
        ("ssl.keystore.type", settings.keystore_type, settings.has_keystore),
        ("ssl.truststore.type", settings.truststore_type, settings.has_truststore),
    ):
        if used and kind not in STORE_TYPES:
            raise ValueError(f"{key}={kind} is not supported: use PEM or PKCS12")
    return settings
