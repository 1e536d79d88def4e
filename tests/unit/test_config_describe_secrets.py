"""DescribeConfigs on a BROKER resource hides Kafka's PASSWORD-type keys: value and synonym
values null, ``sensitive`` set, as Kafka's broker answers (a secret never leaves the node)."""

from __future__ import annotations

from sparklog.broker.config_describe import describe_broker_configs
from sparklog.config import ServerConfig
from tests.unit.test_config import BASE

SECRETS = {
    "ssl.keystore.password": "keystore-secret",
    "ssl.key.password": "key-secret",
    "ssl.truststore.password": "truststore-secret",
    "ssl.keystore.key": "-----BEGIN PRIVATE KEY----- inline-secret",
    "sparklog.remote.storage.s3.secret.access.key": "s3-secret",
}


def test_password_keys_are_sensitive_and_never_shown() -> None:
    config = ServerConfig.from_props(
        {**BASE, "ssl.keystore.location": "/etc/keystore.p12", **SECRETS}
    )
    entries = {entry.name: entry for entry in describe_broker_configs(config)}
    for name in SECRETS:
        entry = entries[name]
        assert entry.sensitive and entry.value is None, entry
        assert all(synonym.value is None for synonym in entry.synonyms), entry
        assert entry.config_type == 9  # PASSWORD
    shown = repr(list(entries.values()))
    assert not any(secret in shown for secret in SECRETS.values())
    # an ordinary key is still shown, and not sensitive
    location = entries["ssl.keystore.location"]
    assert (location.value, location.sensitive) == ("/etc/keystore.p12", False)


def test_listener_prefixed_keys_are_described_with_the_keys_type() -> None:
    """``listener.name.<l>.<key>`` is listed with the type of ``<key>``: a PASSWORD is sensitive
    and hidden (its synonyms too), anything else shown, with the un-prefixed key as a synonym."""
    secret = "listener-keystore-secret"
    config = ServerConfig.from_props(
        {
            **BASE,
            "listener.name.internal.ssl.keystore.password": secret,
            "listener.name.internal.ssl.keystore.location": "/etc/internal.p12",
            "ssl.keystore.password": "base-secret",
            "listener.name.internal.plain.sasl.jaas.config": (
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="jaas-pw";'
            ),
        }
    )
    entries = {entry.name: entry for entry in describe_broker_configs(config)}
    password = entries["listener.name.internal.ssl.keystore.password"]
    assert password.sensitive and password.value is None and password.config_type == 9
    assert [s.name for s in password.synonyms] == [password.name, "ssl.keystore.password"]
    assert all(synonym.value is None for synonym in password.synonyms)
    location = entries["listener.name.internal.ssl.keystore.location"]
    assert (location.value, location.sensitive, location.config_type) == (
        "/etc/internal.p12",
        False,
        2,
    )
    assert [(s.name, s.value) for s in location.synonyms] == [
        (location.name, "/etc/internal.p12"),
        ("ssl.keystore.location", None),
    ]
    jaas = entries["listener.name.internal.plain.sasl.jaas.config"]
    assert jaas.sensitive and jaas.value is None and jaas.config_type == 9
    shown = repr(list(entries.values()))
    assert not any(s in shown for s in (secret, "base-secret", "jaas-pw"))
