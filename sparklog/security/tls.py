"""TLS contexts from Kafka's ``ssl.*`` settings, and the mTLS principal of a peer certificate.

Contract:
- :func:`server_context` / :func:`client_context` build a standard-library
  :class:`ssl.SSLContext` from :class:`SslSettings`. Keystores: PEM (``ssl.keystore.location``
  holding key and chain, or inline ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``;
  an encrypted key uses ``ssl.key.password``) or PKCS12 (read with ``cryptography``,
  ``ssl.keystore.password``). Truststores: PEM (file or inline ``ssl.truststore.certificates``)
  or PKCS12. Key material that must pass through a file to reach OpenSSL is written to a
  private (0700) temporary directory and removed before the call returns.
- ``ssl.enabled.protocols`` bounds the TLS versions (``ssl.protocol=TLSv1.2`` caps them at
  1.2); ``ssl.client.auth`` none/requested/required maps to CERT_NONE/CERT_OPTIONAL/
  CERT_REQUIRED. A client verifies the server against
  its truststore (the system's when none is set) and checks the host name unless
  ``ssl.endpoint.identification.algorithm`` is empty.
- Any problem is a :class:`ConfigError` naming the key, never echoing a secret.
- :func:`peer_principal` maps a peer's DER certificate through ``ssl.principal.mapping.rules``
  to ``User:<name>``; no certificate is ``User:ANONYMOUS``.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from sparklog.config_keys import ConfigError
from sparklog.security.principal import ANONYMOUS, KafkaPrincipal
from sparklog.security.server_config import SslSettings
from sparklog.security.ssl_principal import SslPrincipalMapper

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read {key} {path}: {exc.strerror}") from None


def _pem_certificates(certificates: list[x509.Certificate]) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


def _load_pkcs12_keystore(context: ssl.SSLContext, settings: SslSettings) -> None:
    assert settings.keystore_location is not None
    data = _read(settings.keystore_location, "ssl.keystore.location")
    password = (settings.keystore_password or "").encode() or None
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password)
    except ValueError:
        raise ConfigError(
            "ssl.keystore.location: cannot read the PKCS12 keystore "
            "(wrong ssl.keystore.password, or not a PKCS12 file)"
        ) from None
    if key is None or cert is None:
        raise ConfigError("ssl.keystore.location: the PKCS12 keystore holds no private key entry")
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    _load_chain_text(context, _pem_certificates([cert, *extra]), key_pem, None)


def _load_chain_text(
    context: ssl.SSLContext, chain_pem: str, key_pem: str, password: str | None
) -> None:
    with tempfile.TemporaryDirectory(prefix="sparklog-tls-") as directory:
        os.chmod(directory, 0o700)
        chain_path = Path(directory, "chain.pem")
        key_path = Path(directory, "key.pem")
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as key_file:
            key_file.write(key_pem)
        chain_path.write_text(chain_pem)
        try:
            context.load_cert_chain(chain_path, key_path, password)
        except ssl.SSLError:
            raise ConfigError(
                "ssl.keystore.certificate.chain / ssl.keystore.key: the certificate chain and "
                "private key cannot be loaded (wrong ssl.key.password, or they do not match)"
            ) from None


def _load_keystore(context: ssl.SSLContext, settings: SslSettings) -> None:
    if settings.keystore_type == "PKCS12":
        _load_pkcs12_keystore(context, settings)
    elif settings.keystore_certificate_chain:
        _load_chain_text(
            context,
            settings.keystore_certificate_chain,
            settings.keystore_key or "",
            settings.key_password,
        )
    elif settings.keystore_location:
        _read(settings.keystore_location, "ssl.keystore.location")  # a clear error if absent
        try:
            context.load_cert_chain(settings.keystore_location, None, settings.key_password or None)
        except ssl.SSLError:
            raise ConfigError(
                "ssl.keystore.location: the PEM file must hold the private key and its "
                "certificate chain (an encrypted key needs ssl.key.password)"
            ) from None


def _load_truststore(context: ssl.SSLContext, settings: SslSettings, purpose: ssl.Purpose) -> None:
    try:
        if settings.truststore_certificates:
            context.load_verify_locations(cadata=settings.truststore_certificates)
        elif settings.truststore_location and settings.truststore_type == "PKCS12":
            data = _read(settings.truststore_location, "ssl.truststore.location")
            password = (settings.truststore_password or "").encode() or None
            try:
                store = pkcs12.load_pkcs12(data, password)
            except ValueError:
                raise ConfigError(
                    "ssl.truststore.location: cannot read the PKCS12 truststore "
                    "(wrong ssl.truststore.password, or not a PKCS12 file)"
                ) from None
            certificates = [c.certificate for c in store.additional_certs]
            if store.cert is not None:
                certificates.append(store.cert.certificate)
            if not certificates:
                raise ConfigError("ssl.truststore.location: the PKCS12 truststore is empty")
            context.load_verify_locations(cadata=_pem_certificates(certificates))
        elif settings.truststore_location:
            _read(settings.truststore_location, "ssl.truststore.location")
            context.load_verify_locations(cafile=settings.truststore_location)
        else:
            context.load_default_certs(purpose)
    except ssl.SSLError:
        raise ConfigError("ssl.truststore.*: the trusted certificates cannot be loaded") from None


def _bound_versions(context: ssl.SSLContext, settings: SslSettings) -> None:
    versions = sorted(_VERSIONS[v] for v in settings.enabled_protocols if v in _VERSIONS)
    if settings.protocol == "TLSv1.2":
        versions = [v for v in versions if v <= ssl.TLSVersion.TLSv1_2]
    if not versions:
        raise ConfigError("ssl.enabled.protocols names no supported version (TLSv1.2, TLSv1.3)")
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]


def server_context(settings: SslSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _bound_versions(context, settings)
    _load_keystore(context, settings)
    verify = _CLIENT_AUTH.get(settings.client_auth)
    if verify is None:
        raise ConfigError("ssl.client.auth must be one of none, requested, required")
    context.verify_mode = verify
    if verify != ssl.CERT_NONE:
        _load_truststore(context, settings, ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(settings: SslSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _bound_versions(context, settings)
    context.check_hostname = settings.endpoint_identification_algorithm.lower() == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    _load_truststore(context, settings, ssl.Purpose.SERVER_AUTH)
    if settings.has_keystore:
        _load_keystore(context, settings)
    return context


def distinguished_name(der: bytes) -> str:
    """The subject DN of a DER certificate, most specific RDN first (RFC 4514)."""
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def peer_principal(ssl_object: ssl.SSLObject | None, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """``User:<mapped DN>`` of the peer's certificate, ANONYMOUS without one.

    Raises :class:`~sparklog.security.ssl_principal.NoMatchingRule` when no rule maps the DN.
    """
    if ssl_object is None:
        return ANONYMOUS
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return ANONYMOUS
    return KafkaPrincipal.user(mapper.name(distinguished_name(der)))
