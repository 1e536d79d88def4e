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
