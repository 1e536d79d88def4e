"""SASL listeners: PLAIN and SCRAM over KIP-152 framing, failures, the pre-auth gate, KIP-368."""

from __future__ import annotations

import base64
import socket
import struct
import time
from collections.abc import Callable, Iterator

import pytest

from sparklog.client.connection import KafkaConnection
from sparklog.protocol.errors import ErrorCode
from sparklog.protocol.headers import encode_request
from sparklog.protocol.messages import API_BY_NAME
from sparklog.protocol.types import join_chunks
from sparklog.security import scram
from sparklog.security.jaas import PLAIN_LOGIN_MODULE, JaasModule
from sparklog.security.listener_runtime import ListenerRuntime
from sparklog.security.sasl_client import SaslAuthenticationError, authenticate_blocking
from sparklog.security.server_config import ListenerSecurity
from tests.unit.security.listener_harness import Harness, serving

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CREDENTIALS = {
    (mechanism, "alice"): scram.make_credential(mechanism, "alice-secret")
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
}


def runtime(reauth_ms: int = 0) -> ListenerRuntime:
    jaas = {
        "PLAIN": JaasModule(
            PLAIN_LOGIN_MODULE, "required", {"user_alice": "alice-secret", "user_bob": "bob-pw"}
        )
    }
    security = ListenerSecurity("SASL", "SASL_PLAINTEXT", None, MECHANISMS, jaas, reauth_ms)
    return ListenerRuntime(security, lambda mech, user: CREDENTIALS.get((mech, user)))


@pytest.fixture
def harness() -> Iterator[Harness]:
    with serving(runtime()) as running:
        yield running


def login(port: int, mechanism: str, user: str, password: str) -> KafkaConnection:
    def authenticate(conn: KafkaConnection) -> None:
        authenticate_blocking(
            lambda api, body, version: conn.request(api, body, version=version),
            mechanism,
            user,
            password,
        )

    return KafkaConnection("127.0.0.1", port, authenticate=authenticate, timeout_s=30)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_login_sets_the_principal(harness: Harness, mechanism: str) -> None:
    with login(harness.port, mechanism, "alice", "alice-secret") as conn:
        conn.request("Metadata", {"topics": []})
    # ApiVersions before SASL is anonymous; the request after it is alice's.
    assert harness.principals == ["User:ANONYMOUS", "User:alice"]


@pytest.mark.parametrize(
    ("mechanism", "user"),
    [(m, u) for m in MECHANISMS for u in ("alice", "nobody")],
)
def test_wrong_password_or_user_is_sasl_authentication_failed(
    harness: Harness, mechanism: str, user: str
) -> None:
    with pytest.raises(SaslAuthenticationError) as info:
        login(harness.port, mechanism, user, "not-the-password")
    assert info.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert str(info.value) == (
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )
    assert harness.principals == ["User:ANONYMOUS"]


def test_unsupported_mechanism(harness: Harness) -> None:
    with pytest.raises(SaslAuthenticationError) as info:
        login(harness.port, "GSSAPI", "alice", "x")
    assert info.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM


def raw_request(sock: socket.socket, api: str, version: int, body: dict[str, object]) -> None:
    sock.sendall(join_chunks(encode_request(API_BY_NAME[api], version, 7, "raw", body)))


def closed(sock: socket.socket) -> bool:
    sock.settimeout(30)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True


def test_request_before_authentication_closes_the_connection(harness: Harness) -> None:
    with socket.create_connection(("127.0.0.1", harness.port), timeout=30) as sock:
        raw_request(sock, "Metadata", 12, {"topics": None})
        assert closed(sock)
    with socket.create_connection(("127.0.0.1", harness.port), timeout=30) as sock:
        raw_request(sock, "SaslHandshake", 1, {"mechanism": "PLAIN"})
        raw_request(sock, "Metadata", 12, {"topics": None})
        assert closed(sock)
    # Garbage SASL tokens and frames: closed, and the listener keeps serving.
    for junk in (b"\x00\x00\x00\x05\x00\x11\x00\x01\xff", b"\xff" * 64):
        with socket.create_connection(("127.0.0.1", harness.port), timeout=30) as sock:
            sock.sendall(junk)
            assert closed(sock)
    with socket.create_connection(("127.0.0.1", harness.port), timeout=30) as sock:
        raw_request(sock, "SaslHandshake", 1, {"mechanism": "SCRAM-SHA-512"})
        raw_request(sock, "SaslAuthenticate", 1, {"auth_bytes": b"n,,n=alice,r=\x00\x01"})
        assert closed(sock)
    assert harness.principals == []
    with login(harness.port, "SCRAM-SHA-512", "alice", "alice-secret") as conn:
        conn.request("Metadata", {"topics": []})
    assert harness.principals[-1] == "User:alice"


def test_reauthentication_kip_368() -> None:
    with serving(runtime(reauth_ms=200)) as harness:
        conn = login(harness.port, "SCRAM-SHA-256", "alice", "alice-secret")
        with conn:
            time.sleep(0.5)  # past the session lifetime: only re-authentication is accepted
            with pytest.raises((ConnectionError, OSError)):
                conn.request("Metadata", {"topics": []})
        conn = login(harness.port, "PLAIN", "alice", "alice-secret")
        with conn:
            time.sleep(0.5)
            authenticate_blocking(
                lambda api, body, version: conn.request(api, body, version=version),
                "PLAIN",
                "alice",
                "alice-secret",
            )
            conn.request("Metadata", {"topics": []})
            # Another principal on re-authentication is refused.
            with pytest.raises(SaslAuthenticationError):
                authenticate_blocking(
                    lambda api, body, version: conn.request(api, body, version=version),
                    "PLAIN",
                    "bob",
                    "bob-pw",
                )
        assert harness.principals.count("User:alice") == 1


def test_session_lifetime_is_returned() -> None:
    with serving(runtime(reauth_ms=3_600_000)) as harness:
        conn = KafkaConnection("127.0.0.1", harness.port, timeout_s=30)
        with conn:
            conn.request("SaslHandshake", {"mechanism": "PLAIN"}, version=1)
            reply = conn.request(
                "SaslAuthenticate", {"auth_bytes": b"\x00alice\x00alice-secret"}, version=1
            )
            assert reply["error_code"] == 0 and reply["session_lifetime_ms"] == 3_600_000


def test_scram_rfc7677_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = scram.make_credential("SCRAM-SHA-256", "pencil", salt=salt)
    nonces = iter(["rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"])
    monkeypatch.setattr("secrets.token_urlsafe", lambda _n: next(nonces))
    client = scram.ScramClient("SCRAM-SHA-256", "user", "pencil")
    server = scram.ScramServer("SCRAM-SHA-256", lambda user: credential if user == "user" else None)
    first = server.respond(client.first())
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = client.final(first)
    assert final.endswith(b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    server_final = server.respond(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.verify(server_final)
    assert server.username == "user"


def test_scram_rejects_tampering() -> None:
    credential = scram.make_credential("SCRAM-SHA-512", "pw")
    mutations: list[Callable[[bytes], bytes]] = [
        lambda m: m.replace(b"p=", b"p=AAAA"),
        lambda m: m.replace(b"c=biws", b"c=eSws"),
        lambda m: m.replace(b"r=", b"r=x"),
        lambda m: m + b"\xff",
    ]
    for mutate in mutations:
        client = scram.ScramClient("SCRAM-SHA-512", "u", "pw")
        server = scram.ScramServer("SCRAM-SHA-512", lambda _u: credential)
        final = client.final(server.respond(client.first()))
        with pytest.raises(scram.ScramError):
            server.respond(mutate(final))


def test_large_frame_before_authentication_closes_the_connection(harness: Harness) -> None:
    # sasl.server.max.receive.size (512 KiB): an unauthenticated peer cannot make us buffer
    # up to socket.request.max.bytes.
    with socket.create_connection(("127.0.0.1", harness.port), timeout=30) as sock:
        sock.sendall(struct.pack(">i", 600_000) + b"\x00" * 1024)
        assert closed(sock)
    with login(harness.port, "PLAIN", "alice", "alice-secret") as conn:
        # After authentication the listener's own limit applies: a 600 KB request is served.
        conn.request("Metadata", {"topics": [{"name": "t" * 30_000}] * 20})
    assert harness.principals[-1] == "User:alice"


def test_authentication_metrics(harness: Harness) -> None:
    with login(harness.port, "SCRAM-SHA-512", "alice", "alice-secret") as conn:
        authenticate_blocking(
            lambda api, body, version: conn.request(api, body, version=version),
            "SCRAM-SHA-512",
            "alice",
            "alice-secret",
        )
    for _ in range(2):
        with pytest.raises(SaslAuthenticationError):
            login(harness.port, "PLAIN", "alice", "wrong")
    values = {
        sample.name.attribute: sample.value
        for sample in harness.registry.samples()
        if "socket-server-metrics,listener=TEST" in sample.name.mbean
    }
    assert values == {
        "successful-authentication-total": 1,
        "successful-reauthentication-total": 1,
        "failed-authentication-total": 2,
    }
    assert not any("alice-secret" in str(v) for v in values)
