"""What each listener's security protocol demands, from Kafka's broker keys; fail closed.

Contract:
- :func:`listener_security` resolves one listener's settings: ``listener.name.<name>.<key>``
  (name lower-cased, as Kafka) overrides ``<key>``. The configuration parsed and checked the
  prefixed key at load with ``<key>``'s own definition
  (:func:`sparklog.config_keys.listener_def`); SASL login modules come only from
  ``listener.name.<name>.<mechanism>.sasl.jaas.config``. A SASL_SSL listener asks for client
  certificates only with a listener-prefixed ``ssl.client.auth`` (KIP-684).
- :func:`validate_security` runs at configuration load (before anything touches disk) and
  raises :class:`ConfigError` naming the key for anything asked for that this node does not do:
  an SSL/SASL_SSL listener without a usable keystore, a JKS store, a SASL mechanism other than
  PLAIN/SCRAM-SHA-256/SCRAM-SHA-512, a PLAIN listener without users, TLS versions other than
  1.2/1.3, and any ``listener.name.*`` key we do not read (with the closest per-listener key
  for a typo). A listener is therefore never served with less protection than its protocol
  says.
- :func:`unsupported_key_message` names the Kafka security keys we refuse outright (Kerberos,
  OAUTHBEARER, delegation tokens, custom engine/callback/principal-builder classes...).
- Error messages name keys, never values: values may be passwords or private keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sparklog.config_keys import (
    JAAS_SUFFIX,
    LISTENER_KEYS,
    LISTENER_PREFIX,
    ConfigError,
    did_you_mean,
    split_listener_key,
)
from sparklog.security.jaas import JaasModule, parse_jaas_config

if TYPE_CHECKING:
    from sparklog.security.settings import ServerSettings

SSL_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SUPPORTED_TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
STORE_TYPES = ("PEM", "PKCS12")
# Security protocols this node can serve today; a listener asking for another stops the node.
IMPLEMENTED_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
# Protocols this node can also speak as a client (inter-broker and controller channels).
IMPLEMENTED_CLIENT_PROTOCOLS = IMPLEMENTED_PROTOCOLS

_UNSUPPORTED_EXACT = frozenset(
    {
        "principal.builder.class",
        "security.providers",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "ssl.engine.factory.class",
        "ssl.allow.dn.changes",
        "ssl.allow.san.changes",
        "sasl.jaas.config",
        "sasl.server.callback.handler.class",
        "sasl.client.callback.handler.class",
        "sasl.login.callback.handler.class",
        "sasl.login.class",
    }
)
_UNSUPPORTED_PREFIXES = ("sasl.kerberos.", "sasl.oauthbearer.", "sasl.login.", "delegation.token.")


def unsupported_key_message(key: str) -> str | None:
    """Why a Kafka security key is refused, or None if it is not one we refuse."""
    split = split_listener_key(key)
    bare = key if split is None else split[1]
    if bare in _UNSUPPORTED_EXACT or bare.startswith(_UNSUPPORTED_PREFIXES):
        return (
            f"Configuration {key} is not supported by sparklog (TLS with PEM/PKCS12 stores and "
            "SASL PLAIN/SCRAM-SHA-256/SCRAM-SHA-512 are); remove it rather than have it ignored"
        )
    return None


@dataclass(frozen=True, slots=True)
class SslSettings:
    """The TLS keys of one listener (or of a client); secrets are kept out of ``repr``."""

    keystore_type: str = "PEM"
    keystore_location: str | None = None
    keystore_password: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    keystore_certificate_chain: str | None = None
    keystore_key: str | None = field(default=None, repr=False)
    truststore_type: str = "PEM"
    truststore_location: str | None = None
    truststore_password: str | None = field(default=None, repr=False)
    truststore_certificates: str | None = None
    client_auth: str = "none"
    enabled_protocols: tuple[str, ...] = SUPPORTED_TLS_VERSIONS
    # ssl.protocol: TLSv1.2 caps the version at 1.2 (a Java TLSv1.2 context); TLSv1.3/TLS do not.
    protocol: str = "TLSv1.3"
    principal_mapping_rules: str = "DEFAULT"
    endpoint_identification_algorithm: str = "https"

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_certificate_chain)

    @property
    def has_truststore(self) -> bool:
        return bool(self.truststore_location or self.truststore_certificates)


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """One listener: its protocol, TLS settings (SSL/SASL_SSL), SASL mechanisms and logins."""

    name: str
    protocol: str
    ssl: SslSettings | None
    mechanisms: tuple[str, ...]
    jaas: dict[str, JaasModule] = field(default_factory=dict, repr=False)
    reauth_ms: int = 0
    # sasl.server.max.receive.size: the largest frame accepted before authentication.
    max_receive_bytes: int = 524288

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    def plain_users(self) -> dict[str, str]:
        module = self.jaas.get("PLAIN")
        return module.users() if module is not None else {}

    def client_login(self, mechanism: str) -> tuple[str, str] | None:
        """(username, password) this node uses as a client of ``mechanism`` on this listener."""
        module = self.jaas.get(mechanism)
        if module is None:
            return None
        username, password = module.options.get("username"), module.options.get("password")
        if username is None or password is None:
            return None
        return username, password


def _value(config: ServerSettings, listener: str, key: str) -> Any:
    """``listener.name.<listener>.<key>`` where it is set (parsed at load with ``key``'s own
    definition), else ``key``."""
    prefixed = f"{LISTENER_PREFIX}{listener.lower()}.{key}"
    return config.get(prefixed if config.is_set(prefixed) else key)


def ssl_settings_from(get: Any) -> SslSettings:
    """Build :class:`SslSettings` from ``get(key)`` returning the typed value of a key."""
    return SslSettings(
        keystore_type=str(get("ssl.keystore.type")).upper(),
        keystore_location=get("ssl.keystore.location"),
        keystore_password=get("ssl.keystore.password"),
        key_password=get("ssl.key.password"),
        keystore_certificate_chain=get("ssl.keystore.certificate.chain"),
        keystore_key=get("ssl.keystore.key"),
        truststore_type=str(get("ssl.truststore.type")).upper(),
        truststore_location=get("ssl.truststore.location"),
        truststore_password=get("ssl.truststore.password"),
        truststore_certificates=get("ssl.truststore.certificates"),
        client_auth=str(get("ssl.client.auth")),
        enabled_protocols=tuple(get("ssl.enabled.protocols")),
        protocol=str(get("ssl.protocol")),
        principal_mapping_rules=str(get("ssl.principal.mapping.rules")),
        endpoint_identification_algorithm=str(get("ssl.endpoint.identification.algorithm")),
    )


def listener_security(config: ServerSettings, name: str) -> ListenerSecurity:
    protocol = config.security_protocol_map.get(name, "PLAINTEXT")
    ssl = None
    if protocol in SSL_PROTOCOLS:
        ssl = ssl_settings_from(lambda key: _value(config, name, key))
        prefixed_auth = f"{LISTENER_PREFIX}{name.lower()}.ssl.client.auth"
        if protocol == "SASL_SSL" and prefixed_auth not in config.props:
            # KIP-684: SASL_SSL asks for client certificates only when the listener says so.
            ssl = replace(ssl, client_auth="none")
    mechanisms: tuple[str, ...] = ()
    jaas: dict[str, JaasModule] = {}
    if protocol in SASL_PROTOCOLS:
        mechanisms = tuple(m.upper() for m in _value(config, name, "sasl.enabled.mechanisms"))
        prefix = f"{LISTENER_PREFIX}{name.lower()}."
        for key, raw in config.props.items():
            if key.startswith(prefix) and key.endswith(JAAS_SUFFIX):
                mechanism = key[len(prefix) : -len(JAAS_SUFFIX)].upper()
                try:
                    jaas[mechanism] = parse_jaas_config(str(raw))
                except ValueError as exc:
                    raise ConfigError(f"Invalid value for configuration {key}: {exc}") from None
    return ListenerSecurity(
        name=name,
        protocol=protocol,
        ssl=ssl,
        mechanisms=mechanisms,
        jaas=jaas,
        reauth_ms=int(_value(config, name, "connections.max.reauth.ms")),
        max_receive_bytes=int(config.get("sasl.server.max.receive.size")),
    )


def _check_listener_keys(config: ServerSettings) -> None:
    jaas_keys = [m.lower() + JAAS_SUFFIX for m in SUPPORTED_MECHANISMS]
    for key in config.props:
        split = split_listener_key(key)
        if split is None:
            continue
        listener, suffix = split
        if suffix in LISTENER_KEYS:
            continue
        mechanism = suffix[: -len(JAAS_SUFFIX)] if suffix.endswith(JAAS_SUFFIX) else None
        if mechanism and mechanism.upper() in SUPPORTED_MECHANISMS:
            continue
        hint = did_you_mean(
            suffix, [*LISTENER_KEYS, *jaas_keys], prefix=f"{LISTENER_PREFIX}{listener}."
        )
        raise ConfigError(
            f"Configuration {key} is not supported by sparklog: per-listener keys are "
            f"{', '.join(sorted(LISTENER_KEYS))} and "
            f"<{'|'.join(m.lower() for m in SUPPORTED_MECHANISMS)}>{JAAS_SUFFIX}.{hint}"
        )


def _check_ssl(listener: str, ssl: SslSettings) -> None:
    where = f"listener {listener}"
    for version in ssl.enabled_protocols:
        if version not in SUPPORTED_TLS_VERSIONS:
            raise ConfigError(
                f"ssl.enabled.protocols of {where}: {version} is not supported "
                f"(use {', '.join(SUPPORTED_TLS_VERSIONS)})"
            )
    if ssl.protocol not in (*SUPPORTED_TLS_VERSIONS, "TLS"):
        raise ConfigError(
            f"ssl.protocol={ssl.protocol} of {where} is not supported (use TLSv1.3, TLSv1.2 or TLS)"
        )
    if not ssl.enabled_protocols:
        raise ConfigError(f"ssl.enabled.protocols of {where} is empty")
    if not ssl.has_keystore:
        raise ConfigError(
            f"{where} uses TLS but has no keystore: set ssl.keystore.location (PKCS12 or PEM) "
            "or ssl.keystore.certificate.chain and ssl.keystore.key (PEM), directly or as "
            f"listener.name.{listener.lower()}.ssl.*"
        )
    for key, store_type in (
        ("ssl.keystore.type", ssl.keystore_type),
        ("ssl.truststore.type", ssl.truststore_type),
    ):
        used = ssl.has_keystore if key == "ssl.keystore.type" else ssl.has_truststore
        if used and store_type not in STORE_TYPES:
            raise ConfigError(
                f"{key}={store_type} of {where} is not supported: use PEM or PKCS12 "
                "(convert a JKS store with keytool -importkeystore -deststoretype PKCS12)"
            )
    if ssl.keystore_certificate_chain and not ssl.keystore_key:
        raise ConfigError(
            f"ssl.keystore.key of {where} is required with ssl.keystore.certificate.chain"
        )
    if ssl.keystore_certificate_chain and ssl.keystore_type != "PEM":
        raise ConfigError(f"ssl.keystore.certificate.chain of {where} needs ssl.keystore.type=PEM")
    if ssl.truststore_certificates and ssl.truststore_type != "PEM":
        raise ConfigError(f"ssl.truststore.certificates of {where} needs ssl.truststore.type=PEM")


def _check_sasl(security: ListenerSecurity) -> None:
    where = f"listener {security.name}"
    if not security.mechanisms:
        raise ConfigError(f"sasl.enabled.mechanisms of {where} is empty")
    for mechanism in security.mechanisms:
        if mechanism not in SUPPORTED_MECHANISMS:
            raise ConfigError(
                f"sasl.enabled.mechanisms of {where}: {mechanism} is not supported by sparklog "
                f"(use {', '.join(SUPPORTED_MECHANISMS)}; set sasl.enabled.mechanisms or "
                f"listener.name.{security.name.lower()}.sasl.enabled.mechanisms)"
            )
    if "PLAIN" in security.mechanisms and not security.plain_users():
        raise ConfigError(
            f"{where} enables PLAIN but listener.name.{security.name.lower()}.plain.sasl.jaas."
            'config defines no user_<name>="<password>" entries'
        )


def _check_client_mechanism(config: ServerSettings, listener: str, key: str) -> None:
    security = listener_security(config, listener)
    if security.protocol not in IMPLEMENTED_CLIENT_PROTOCOLS:
        raise ConfigError(
            f"{'inter.broker.listener.name' if 'broker' in key else 'controller.listener.names'}"
            f" names listener {listener} ({security.protocol}), but this node cannot yet connect "
            "to other nodes over it: use a PLAINTEXT listener inside the cluster for now"
        )
    if not security.uses_sasl:
        return
    mechanism = str(config.get(key)).upper()
    if mechanism not in security.mechanisms:
        raise ConfigError(
            f"{key}={mechanism} is not enabled on listener {listener} "
            f"(its sasl.enabled.mechanisms: {', '.join(security.mechanisms)})"
        )
    if security.client_login(mechanism) is None:
        raise ConfigError(
            f"{key}={mechanism}: listener.name.{listener.lower()}.{mechanism.lower()}."
            "sasl.jaas.config must give the username and password this node logs in with"
        )


def validate_security(config: ServerSettings) -> None:
    """Raise :class:`ConfigError` for any security setting this node would not honour."""
    _check_listener_keys(config)
    if config.is_set("security.inter.broker.protocol") and config.is_set(
        "inter.broker.listener.name"
    ):
        raise ConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set"
        )
    for listener in config.listeners:
        security = listener_security(config, listener.name)
        if security.protocol not in IMPLEMENTED_PROTOCOLS:
            raise ConfigError(
                f"listener.security.protocol.map maps listener {listener.name} to "
                f"{security.protocol}, which sparklog does not serve yet: the node will not "
                "start rather than serve it unprotected"
            )
        if security.ssl is not None:
            _check_ssl(listener.name, security.ssl)
        if security.uses_sasl:
            _check_sasl(security)
    if config.is_broker:
        _check_client_mechanism(
            config, config.inter_broker_listener_name, "sasl.mechanism.inter.broker.protocol"
        )
    for name in config.controller_listener_names:
        if config.is_controller or config.is_broker:
            _check_client_mechanism(config, name, "sasl.mechanism.controller.protocol")
