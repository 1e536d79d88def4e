"""Fail closed: every security setting we would not honour stops the node, naming the key."""

from __future__ import annotations

import pytest

from sparklog.config import ConfigError, ServerConfig
from sparklog.security import server_config
from sparklog.security.jaas import parse_jaas_config

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.bootstrap.servers": "localhost:9093",
}
SECRET = "s3cr3t-value"


def load(**props: str) -> ServerConfig:
    return ServerConfig.from_props({**BASE, **props})


@pytest.mark.parametrize(
    "key",
    [
        "sasl.kerberos.service.name",
        "sasl.oauthbearer.jwks.endpoint.url",
        "principal.builder.class",
        "ssl.cipher.suites",
        "ssl.engine.factory.class",
        "sasl.server.callback.handler.class",
        "delegation.token.secret.key",
        "listener.name.plaintext.sasl.login.class",
        "listener.name.plaintext.ssl.provider",
    ],
)
def test_unsupported_kafka_security_keys_stop_the_node(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"Configuration {key} is not supported") as info:
        load(**{key: SECRET})
    assert SECRET not in str(info.value)


def test_unknown_listener_prefixed_key_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"listener.name.plaintext.foo.bar is not supported"):
        load(**{"listener.name.plaintext.foo.bar": "1"})


def test_listener_prefixed_typo_names_the_closest_key() -> None:
    with pytest.raises(
        ConfigError,
        match=r"listener\.name\.internal\.ssl\.keystore\.locaton is not supported.*"
        r"Did you mean 'listener\.name\.internal\.ssl\.keystore\.location'\?",
    ):
        load(**{"listener.name.internal.ssl.keystore.locaton": "/k.p12"})


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("ssl.client.auth", "bogus", "Value must be one of none, requested, required"),
        ("connections.max.reauth.ms", "soon", "expected a 64-bit integer >= 0"),
        ("max.connections", "-1", "Value must be at least 0"),
    ],
)
def test_listener_prefixed_keys_are_checked_at_load_as_the_key_itself(
    key: str, raw: str, expected: str
) -> None:
    """Every listener's keys, served over TLS or not, and of a listener ``listeners`` does not
    name: the prefixed key has the un-prefixed key's type and checks."""
    for listener in ("plaintext", "internal"):
        prefixed = f"listener.name.{listener}.{key}"
        with pytest.raises(ConfigError) as info:
            load(**{prefixed: raw})
        assert str(info.value) == f"Invalid value {raw!r} for configuration {prefixed}: {expected}"


def test_listener_prefixed_values_are_typed() -> None:
    config = load(
        **{
            "listener.name.internal.ssl.enabled.protocols": "TLSv1.3",
            "listener.name.internal.max.connections": "10",
            "listener.name.internal.ssl.keystore.password": SECRET,
        }
    )
    assert config.get("listener.name.internal.ssl.enabled.protocols") == ("TLSv1.3",)
    assert config.get("listener.name.internal.max.connections") == 10
    assert config.get("listener.name.internal.ssl.keystore.password") == SECRET


def test_plaintext_config_with_security_keys_set_loads() -> None:
    config = load(**{"ssl.client.auth": "required", "sasl.enabled.mechanisms": "PLAIN"})
    assert config.get("ssl.client.auth") == "required"


def test_unserved_protocol_stops_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_config, "IMPLEMENTED_PROTOCOLS", frozenset({"PLAINTEXT"}))
    with pytest.raises(ConfigError, match="listener SASL_SSL to SASL_SSL, which sparklog does"):
        load(
            listeners="PLAINTEXT://:9092,CONTROLLER://:9093,SASL_SSL://:9094",
        )


def tls_and_sasl(monkeypatch: pytest.MonkeyPatch) -> None:
    every = frozenset(server_config.SASL_PROTOCOLS | {"SSL", "PLAINTEXT"})
    monkeypatch.setattr(server_config, "IMPLEMENTED_PROTOCOLS", every)
    monkeypatch.setattr(server_config, "IMPLEMENTED_CLIENT_PROTOCOLS", every)


SSL_LISTENERS = "PLAINTEXT://:9092,CONTROLLER://:9093,SSL://:9094"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({}, "listener SSL uses TLS but has no keystore"),
        ({"ssl.keystore.location": "/k.jks"}, "ssl.keystore.type=JKS of listener SSL"),
        (
            {
                "ssl.keystore.location": "/k.p12",
                "ssl.keystore.type": "PKCS12",
                "ssl.truststore.location": "/t.jks",
            },
            "ssl.truststore.type=JKS of listener SSL",
        ),
        (
            {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": "x"},
            "ssl.keystore.key of listener SSL is required",
        ),
        (
            {
                "ssl.keystore.location": "/k.p12",
                "ssl.keystore.type": "PKCS12",
                "ssl.enabled.protocols": "TLSv1.1,TLSv1.2",
            },
            "ssl.enabled.protocols of listener SSL: TLSv1.1 is not supported",
        ),
        (
            {
                "ssl.keystore.location": "/k.p12",
                "ssl.keystore.type": "PKCS12",
                "ssl.protocol": "SSLv3",
            },
            "ssl.protocol=SSLv3 of listener SSL is not supported",
        ),
    ],
)
def test_tls_listener_checks(
    monkeypatch: pytest.MonkeyPatch, props: dict[str, str], message: str
) -> None:
    tls_and_sasl(monkeypatch)
    with pytest.raises(ConfigError, match=message):
        load(listeners=SSL_LISTENERS, **props)


def test_listener_override_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    tls_and_sasl(monkeypatch)
    config = load(
        listeners=SSL_LISTENERS,
        **{
            "listener.name.ssl.ssl.keystore.type": "PKCS12",
            "listener.name.ssl.ssl.keystore.location": "/k.p12",
            "listener.name.ssl.ssl.client.auth": "required",
        },
    )
    ssl = server_config.listener_security(config, "SSL").ssl
    assert ssl is not None and ssl.client_auth == "required" and ssl.keystore_type == "PKCS12"
    assert server_config.listener_security(config, "PLAINTEXT").ssl is None


def test_bad_listener_override_names_the_prefixed_key(monkeypatch: pytest.MonkeyPatch) -> None:
    tls_and_sasl(monkeypatch)
    base = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12"}
    with pytest.raises(
        ConfigError,
        match=r"Invalid value 'bogus' for configuration listener\.name\.ssl\.ssl\.client\.auth: "
        r"Value must be one of none, requested, required",
    ):
        load(listeners=SSL_LISTENERS, **base, **{"listener.name.ssl.ssl.client.auth": "bogus"})


SASL_LISTENERS = "PLAINTEXT://:9092,CONTROLLER://:9093,SASL_PLAINTEXT://:9094"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="admin" password="{SECRET}" user_admin="{SECRET}" user_alice="alice-pw";'
)


def test_sasl_default_mechanism_gssapi_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    tls_and_sasl(monkeypatch)
    with pytest.raises(
        ConfigError,
        match=r"sasl.enabled.mechanisms of listener SASL_PLAINTEXT: GSSAPI is not supported",
    ):
        load(listeners=SASL_LISTENERS)


def test_plain_without_users_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    tls_and_sasl(monkeypatch)
    with pytest.raises(ConfigError, match="defines no user_<name>"):
        load(listeners=SASL_LISTENERS, **{"sasl.enabled.mechanisms": "PLAIN"})


def test_plain_users_and_inter_broker_login(monkeypatch: pytest.MonkeyPatch) -> None:
    tls_and_sasl(monkeypatch)
    props = {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "inter.broker.listener.name": "SASL_PLAINTEXT",
    }
    with pytest.raises(ConfigError, match=r"sasl.mechanism.inter.broker.protocol=GSSAPI is not"):
        load(listeners=SASL_LISTENERS, **props)
    config = load(
        listeners=SASL_LISTENERS, **props, **{"sasl.mechanism.inter.broker.protocol": "PLAIN"}
    )
    security = server_config.listener_security(config, "SASL_PLAINTEXT")
    assert security.plain_users() == {"admin": SECRET, "alice": "alice-pw"}
    assert security.client_login("PLAIN") == ("admin", SECRET)
    assert SECRET not in repr(security)
    with pytest.raises(ConfigError, match=r"scram-sha-512.sasl.jaas.config must give"):
        load(
            listeners=SASL_LISTENERS,
            **props,
            **{"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"},
        )


def test_security_inter_broker_protocol() -> None:
    config = load(**{"security.inter.broker.protocol": "PLAINTEXT"})
    assert config.inter_broker_listener_name == "PLAINTEXT"
    with pytest.raises(ConfigError, match=r"Only one of inter.broker.listener.name"):
        load(
            **{
                "security.inter.broker.protocol": "PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
            }
        )


def test_jaas_parser() -> None:
    module = parse_jaas_config(
        "org.apache.kafka.common.security.scram.ScramLoginModule required\n"
        '  username="a\\"b" password=bare;'
    )
    assert module.flag == "required"
    assert module.options == {"username": 'a"b', "password": "bare"}
    for bad in ("x required", 'x maybe a="b";', "x required a=;", 'x required a="b;'):
        with pytest.raises(ValueError) as info:
            parse_jaas_config(bad)
        assert "b" not in str(info.value).split(":")[-1] or "sasl.jaas.config" in str(info.value)


def test_sasl_ssl_client_auth_only_when_listener_prefixed(monkeypatch: pytest.MonkeyPatch) -> None:
    tls_and_sasl(monkeypatch)
    props = {
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093,SASL_SSL://:9094,SSL://:9095",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": "/k.p12",
        "ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    }
    config = load(**props)
    sasl_ssl = server_config.listener_security(config, "SASL_SSL").ssl
    ssl = server_config.listener_security(config, "SSL").ssl
    assert sasl_ssl is not None and sasl_ssl.client_auth == "none"
    assert ssl is not None and ssl.client_auth == "required"
    config = load(**props, **{"listener.name.sasl_ssl.ssl.client.auth": "requested"})
    sasl_ssl = server_config.listener_security(config, "SASL_SSL").ssl
    assert sasl_ssl is not None and sasl_ssl.client_auth == "requested"
