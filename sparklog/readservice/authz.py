"""Who a hot-read call is, and whether it may READ the topic (the Kafka listener's rules).

Contract:
- The principal of a call is that of the Kafka listener whose security the service serves
  (:mod:`sparklog.security.grpc_security`): ``User:<name>`` of the SASL login the call carries
  (already verified by the service's interceptor), else ``User:<mapped DN>`` of the client
  certificate (``ssl.principal.mapping.rules``), else ``User:ANONYMOUS``.
- With an authorizer (``authorizer.class.name``), ``ReadRange`` needs READ on the topic, as a
  Fetch does; a refusal ends the call PERMISSION_DENIED
  ``TOPIC_AUTHORIZATION_FAILED: Not authorized to read topic T``. Without one, every call is
  allowed.
"""

from __future__ import annotations

from typing import Any

from sparklog.security.acls import AclOperation, ResourceType
from sparklog.security.authorizer import StandardAuthorizer
from sparklog.security.grpc_security import basic_login
from sparklog.security.principal import ANONYMOUS, KafkaPrincipal
from sparklog.security.ssl_principal import SslPrincipalMapper


def _certificate_dn(context: Any) -> str | None:
    try:
        pems = context.auth_context().get("x509_pem_cert") or []
    except Exception:  # no TLS: grpc has no auth context to give
        return None
    if not pems:
        return None
    from cryptography import x509

    pem = pems[0] if isinstance(pems[0], bytes) else str(pems[0]).encode()
    return str(x509.load_pem_x509_certificate(pem).subject.rfc4514_string())


class ReadAuthorizer:
    """Checks READ on the topic of each call for the call's principal."""

    def __init__(self, authorizer: StandardAuthorizer, mapping_rules: str | None = None) -> None:
        self.authorizer = authorizer
        self._mapper = SslPrincipalMapper(mapping_rules)

    def principal(self, context: Any) -> KafkaPrincipal:
        login = basic_login(context.invocation_metadata())
        user = login[0] if login is not None else None
        if user is not None:
            return KafkaPrincipal.user(user)
        dn = _certificate_dn(context)
        if dn is not None:
            return KafkaPrincipal.user(self._mapper.name(dn))
        return ANONYMOUS

    def refusal(self, context: Any, topic: str) -> str | None:
        """The message to end the call with, or None when it may read ``topic``."""
        principal = self.principal(context)
        host = _peer_host(context.peer())
        if self.authorizer.authorize(principal, host, AclOperation.READ, ResourceType.TOPIC, topic):
            return None
        return f"TOPIC_AUTHORIZATION_FAILED: Not authorized to read topic {topic}"


def _peer_host(peer: str) -> str:
    """grpc's ``ipv4:1.2.3.4:5678`` / ``ipv6:[::1]:5678`` -> the address."""
    _, _, rest = peer.partition(":")
    host, _, _ = rest.rpartition(":")
    return host.strip("[]")
