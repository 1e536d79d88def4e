"""Connections by address for the blocking clients: one :class:`KafkaConnection` per
``host:port``, opened on first use and reused until dropped or the pool is closed.

``first(addresses)`` opens the first address that answers (a bootstrap list); when none does
it raises :class:`ConnectionError` naming each address and why it failed.
"""

from __future__ import annotations

from collections.abc import Iterable

from sparklog.protocol.errors import ProtocolError
from sparklog.security.client_security import ClientSecurity
from sparklog.security.sasl_client import SaslAuthenticationError

from .connection import KafkaConnection


class ConnectionPool:
    def __init__(
        self, client_id: str, timeout_s: float, security: ClientSecurity | None = None
    ) -> None:
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.security = security
        self._connections: dict[str, KafkaConnection] = {}

    def get(self, address: str) -> KafkaConnection:
        conn = self._connections.get(address)
        if conn is None:
            conn = KafkaConnection.connect(
                address,
                client_id=self.client_id,
                timeout_s=self.timeout_s,
                security=self.security,
            )
            self._connections[address] = conn
        return conn

    def first(self, addresses: Iterable[str]) -> tuple[str, KafkaConnection]:
        failures = []
        for address in addresses:
            try:
                return address, self.get(address)
            except SaslAuthenticationError as exc:
                # A refused login is not an unreachable broker: say so and stop.
                raise ConnectionError(f"{address}: SASL authentication failed: {exc}") from None
            except (OSError, ProtocolError, ValueError) as exc:
                failures.append(f"{address} ({getattr(exc, 'strerror', None) or exc})")
        raise ConnectionError(f"cannot reach {', '.join(failures) or 'any address'}")

    def drop(self, address: str) -> None:
        conn = self._connections.pop(address, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
