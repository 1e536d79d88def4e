"""TLS listeners: PEM and PKCS12 stores, client auth modes, mTLS principals, versions."""

from __future__ import annotations

import socket
import ssl
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

from sparklog.client.connection import KafkaConnection
from sparklog.config import ConfigError
from sparklog.security.listener_runtime import ListenerRuntime
from sparklog.security.server_config import ListenerSecurity, SslSettings
from sparklog.security.tls import client_context
from tests.unit.security.certs import TestCA
from tests.unit.security.listener_harness import serving

PASSWORD = "store-Pa55word"


@pytest.fixture(scope="module")
def ca() -> TestCA:
    return TestCA()


@pytest.fixture
def stores(ca: TestCA, tmp_path: Path) -> dict[str, Path]:
    server = ca.issue("localhost", server=True)
    alice = ca.issue("alice", ou="eng")
    return {
        "server_pem": ca.write_pem_keystore(server, tmp_path / "server.pem"),
        "server_p12": ca.write_pkcs12(server, tmp_path / "server.p12", PASSWORD),
        "alice_pem": ca.write_pem_keystore(alice, tmp_path / "alice.pem"),
        "trust_pem": ca.write_truststore_pem(tmp_path / "ca.pem"),
    }


def runtime(ssl_settings: SslSettings) -> ListenerRuntime:
    return ListenerRuntime(ListenerSecurity("SSL", "SSL", ssl_settings, ()))


def client(stores: dict[str, Path], *, cert: bool = True, **overrides: object) -> ssl.SSLContext:
    settings = SslSettings(
        truststore_location=str(stores["trust_pem"]),
        keystore_location=str(stores["alice_pem"]) if cert else None,
    )
    return client_context(replace(settings, **overrides))  # type: ignore[arg-type]


def connect(port: int, context: ssl.SSLContext) -> KafkaConnection:
    return KafkaConnection("localhost", port, ssl_context=context, timeout_s=30)


def test_mtls_required_pem_keystore_default_principal(stores: dict[str, Path]) -> None:
    settings = SslSettings(
        keystore_location=str(stores["server_pem"]),
        truststore_location=str(stores["trust_pem"]),
        client_auth="required",
    )
    with serving(runtime(settings)) as harness:
        with connect(harness.port, client(stores)) as conn:
            conn.request("Metadata", {"topics": []})
        assert harness.principals == ["User:CN=alice,OU=eng,O=sparklog-test"] * 2
        with (
            pytest.raises((ssl.SSLError, ConnectionError, OSError)),
            connect(harness.port, client(stores, cert=False)) as conn,
        ):
            conn.request("Metadata", {"topics": []})
        assert len(harness.principals) == 2


def test_pkcs12_keystore_and_mapping_rules(ca: TestCA, stores: dict[str, Path]) -> None:
    trust_p12 = stores["trust_pem"].with_suffix(".p12")
    trust_p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, [ca.cert], BestAvailableEncryption(PASSWORD.encode())
        )
    )
    settings = SslSettings(
        keystore_type="PKCS12",
        keystore_location=str(stores["server_p12"]),
        keystore_password=PASSWORD,
        truststore_type="PKCS12",
        truststore_location=str(trust_p12),
        truststore_password=PASSWORD,
        client_auth="requested",
        principal_mapping_rules="RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U,DEFAULT",
    )
    with serving(runtime(settings)) as harness:
        with connect(harness.port, client(stores)):
            pass
        with connect(harness.port, client(stores, cert=False)):
            pass
        assert harness.principals == ["User:ALICE@ENG", "User:ANONYMOUS"]


def test_inline_pem_with_encrypted_key(ca: TestCA, stores: dict[str, Path]) -> None:
    server = ca.issue("localhost", server=True)
    settings = SslSettings(
        keystore_certificate_chain=server.cert_pem() + ca.cert_pem(),
        keystore_key=server.key_pem(PASSWORD),
        key_password=PASSWORD,
    )
    with serving(runtime(settings)) as harness:
        with connect(harness.port, client(stores, cert=False)):
            pass
        assert harness.principals == ["User:ANONYMOUS"]
    with pytest.raises(ConfigError) as info:
        runtime(replace(settings, key_password="Not-It-9"))
    assert "Not-It-9" not in str(info.value) and PASSWORD not in str(info.value)


def test_wrong_keystore_password_is_a_config_error(stores: dict[str, Path]) -> None:
    settings = SslSettings(
        keystore_type="PKCS12", keystore_location=str(stores["server_p12"]), keystore_password="x"
    )
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.password") as info:
        runtime(settings)
    assert PASSWORD not in str(info.value)


def test_client_rejects_untrusted_server_and_tls_version_bounds(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    settings = SslSettings(
        keystore_location=str(stores["server_pem"]), enabled_protocols=("TLSv1.3",)
    )
    other = TestCA().write_truststore_pem(tmp_path / "other.pem")
    with serving(runtime(settings)) as harness:
        with pytest.raises(ssl.SSLCertVerificationError):
            connect(harness.port, client(stores, truststore_location=str(other)))
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            connect(harness.port, client(stores, enabled_protocols=("TLSv1.2",)))
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            connect(harness.port, client(stores, protocol="TLSv1.2"))
        # Garbage instead of a ClientHello closes that connection only.
        with socket.create_connection(("127.0.0.1", harness.port), timeout=30) as raw:
            raw.sendall(b"\x00\x00\x00\x10" + b"\x00" * 16)
            raw.settimeout(30)
            try:
                while raw.recv(4096):
                    pass
            except OSError:
                pass
        with connect(harness.port, client(stores, cert=False)):
            pass
        assert harness.principals == ["User:ANONYMOUS"]


def test_plaintext_listener_has_no_runtime_and_anonymous_principal() -> None:
    with serving(None) as harness:
        with KafkaConnection("127.0.0.1", harness.port):
            pass
        assert harness.principals == ["User:ANONYMOUS"]
