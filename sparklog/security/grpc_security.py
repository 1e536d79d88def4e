"""Security of the hot read service (gRPC): the same TLS and credentials as a Kafka listener.

Contract:
- The service takes the security of one Kafka listener: ``sparklog.read.security.listener``
  names it; unset, the first broker listener that is not PLAINTEXT (in ``listeners`` order) is
  used, so a node with any secured client listener never serves topic data unprotected over
  gRPC. All-PLAINTEXT brokers keep an insecure port (nothing changes on that path).
- TLS: the listener's keystore and truststore (PEM or PKCS12) become gRPC server credentials;
  ``ssl.client.auth=required`` makes gRPC demand a client certificate signed by the
  truststore (mTLS), ``requested`` asks for one.
- SASL listeners: every call carries ``authorization: Basic base64(user:password)`` metadata,
  checked against the listener's PLAIN users or the user's SCRAM credential (the password's
  salted form recomputed with the stored salt and iterations). A call without valid
  credentials ends UNAUTHENTICATED before the servicer runs; the password is never logged.
- :func:`client_channel_credentials` / :func:`client_call_metadata` are the reader's side,
  built from a :class:`~sparklog.security.client_security.ClientSecurity`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklog.config_keys import ConfigError
from sparklog.security.sasl_server import ScramLookup
from sparklog.security.scram import credential_from_salted_password, salted_password
from sparklog.security.server_config import ListenerSecurity, SslSettings, listener_security

if TYPE_CHECKING:
    import grpc

    from sparklog.security.client_security import ClientSecurity
    from sparklog.security.settings import ServerSettings

log = logging.getLogger(__name__)

SECURITY_LISTENER_KEY = "sparklog.read.security.listener"
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]+)-----.+?-----END \1-----\s*", re.DOTALL)


def read_service_listener(config: ServerSettings) -> ListenerSecurity | None:
    """The listener whose security the read service uses; None: plaintext, anonymous."""
    name = config.props.get(SECURITY_LISTENER_KEY)
    if name:
        names = {listener.name for listener in config.listeners}
        if name.upper() not in names:
            raise ConfigError(f"{SECURITY_LISTENER_KEY}={name} is not a listener of this node")
        security = listener_security(config, name.upper())
        return None if security.protocol == "PLAINTEXT" else security
    for listener in config.broker_listeners:
        if listener.security_protocol != "PLAINTEXT":
            return listener_security(config, listener.name)
    return None


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}") from None


def _unencrypted_key(key_pem: bytes, password: str | None) -> bytes:
    try:
        key = serialization.load_pem_private_key(key_pem, password.encode() if password else None)
    except (ValueError, TypeError):
        raise ConfigError(
            "ssl.keystore: the private key cannot be read (wrong ssl.key.password?)"
        ) from None
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def pem_key_and_chain(settings: SslSettings) -> tuple[bytes, bytes]:
    """(unencrypted private key, certificate chain) in PEM, from any supported keystore."""
    if settings.keystore_type == "PKCS12":
        assert settings.keystore_location is not None
        password = (settings.keystore_password or "").encode() or None
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(
                _read(settings.keystore_location), password
            )
        except ValueError:
            raise ConfigError("ssl.keystore.location: cannot read the PKCS12 keystore") from None
        if key is None or cert is None:
            raise ConfigError("ssl.keystore.location: the PKCS12 keystore holds no key entry")
        chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [cert, *extra])
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return key_pem, chain
    if settings.keystore_certificate_chain:
        chain = settings.keystore_certificate_chain.encode()
        key_text = (settings.keystore_key or "").encode()
    else:
        assert settings.keystore_location is not None
        data = _read(settings.keystore_location)
        blocks = [m.group(0) for m in _PEM_BLOCK.finditer(data)]
        key_text = b"".join(b for b in blocks if b"PRIVATE KEY" in b.split(b"\n", 1)[0])
        chain = b"".join(b for b in blocks if b"CERTIFICATE" in b.split(b"\n", 1)[0])
    return _unencrypted_key(key_text, settings.key_password), chain


def pem_trust(settings: SslSettings) -> bytes | None:
    if settings.truststore_certificates:
        return settings.truststore_certificates.encode()
    if not settings.truststore_location:
        return None
    data = _read(settings.truststore_location)
    if settings.truststore_type != "PKCS12":
        return data
    password = (settings.truststore_password or "").encode() or None
    store = pkcs12.load_pkcs12(data, password)
    certificates = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certificates.append(store.cert.certificate)
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates)


@dataclass(frozen=True, slots=True)
class ReadServiceSecurity:
    listener: ListenerSecurity
    scram_lookup: ScramLookup | None

    def server_credentials(self) -> grpc.ServerCredentials | None:
        import grpc

        settings = self.listener.ssl
        if settings is None:
            return None
        key, chain = pem_key_and_chain(settings)
        trust = pem_trust(settings)
        client_auth = settings.client_auth
        return grpc.ssl_server_credentials(
            [(key, chain)],
            root_certificates=trust if client_auth != "none" else None,
            require_client_auth=client_auth == "required",
        )

    def check_password(self, user: str, password: str) -> bool:
        """True if ``user``/``password`` log in on the listener (PLAIN users or SCRAM)."""
        mechanisms = self.listener.mechanisms
        if "PLAIN" in mechanisms:
            expected = self.listener.plain_users().get(user)
            if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
                return True
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            if mechanism not in mechanisms or self.scram_lookup is None:
                continue
            credential = self.scram_lookup(mechanism, user)
            if credential is None:
                continue
            salted = salted_password(mechanism, password, credential.salt, credential.iterations)
            derived = credential_from_salted_password(
                mechanism, salted, credential.salt, credential.iterations
            )
            if hmac.compare_digest(derived.stored_key, credential.stored_key):
                return True
        return False

    def interceptors(self) -> list[Any]:
        if not self.listener.uses_sasl:
            return []
        return [_basic_auth_interceptor(self.check_password)]


def basic_login(metadata: Any) -> tuple[str, str] | None:
    """(user, password) of a call's ``authorization: Basic`` metadata, or None."""
    for key, value in metadata or ():
        if key.lower() != "authorization" or not isinstance(value, str):
            continue
        scheme, _, encoded = value.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return (user, password) if sep else None
    return None


def _basic_auth_interceptor(check: Callable[[str, str], bool]) -> Any:
    """A grpc.aio server interceptor: calls without valid credentials end UNAUTHENTICATED.

    Built here so grpc is imported only where the read service runs.
    """
    import asyncio

    import grpc

    class BasicAuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        def __init__(self) -> None:
            # (user, sha256(password)) already verified: PBKDF2 once per user and password.
            self._verified: set[tuple[str, bytes]] = set()

        async def intercept_service(
            self,
            continuation: Callable[[Any], Awaitable[Any]],
            handler_call_details: Any,
        ) -> Any:
            login = basic_login(handler_call_details.invocation_metadata)
            if login is not None:
                user, password = login
                digest = hashlib.sha256(password.encode()).digest()
                if (user, digest) in self._verified:
                    return await continuation(handler_call_details)
                if await asyncio.to_thread(check, user, password):
                    self._verified.add((user, digest))
                    return await continuation(handler_call_details)
                log.info("Hot read service: failed authentication of user %r", user)

            async def refuse(request: Any, context: Any) -> None:
                await context.abort(
                    grpc.StatusCode.UNAUTHENTICATED,
                    "SASL_AUTHENTICATION_FAILED: Authentication failed: invalid credentials",
                )

            return grpc.unary_stream_rpc_method_handler(refuse)

    return BasicAuthInterceptor()


def read_service_security(
    config: ServerSettings, scram_lookup: ScramLookup | None
) -> ReadServiceSecurity | None:
    listener = read_service_listener(config)
    if listener is None:
        return None
    return ReadServiceSecurity(listener, scram_lookup)


# -- the reader's side -----------------------------------------------------------------------


def client_channel_credentials(security: ClientSecurity | None) -> grpc.ChannelCredentials | None:
    """TLS channel credentials for a reader (None: insecure channel)."""
    import grpc

    tls = security.tls if security is not None else None
    if tls is None:
        return None
    key_chain = pem_key_and_chain(tls) if tls.has_keystore else None
    return grpc.ssl_channel_credentials(
        root_certificates=pem_trust(tls),
        private_key=key_chain[0] if key_chain else None,
        certificate_chain=key_chain[1] if key_chain else None,
    )


def client_call_metadata(security: ClientSecurity | None) -> list[tuple[str, str]]:
    if security is None or not security.uses_sasl:
        return []
    token = base64.b64encode(f"{security.username}:{security.password}".encode()).decode()
    return [("authorization", f"Basic {token}")]
