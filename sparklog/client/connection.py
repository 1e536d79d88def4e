"""A small blocking Kafka protocol client: one connection, request/response, version choice.

Used by the CLI tools and tests (and later by the connector's driver). It negotiates versions
with ApiVersions on connect and sends each request at the highest version both sides speak (or
the one the caller asks for). With ``ssl_context`` the socket is wrapped in TLS (server name
checked as the context says); ``authenticate`` runs SASL right after ApiVersions. Errors:
:class:`ConnectionError` when the peer goes away, :class:`ProtocolError` when it answers with
bytes we cannot parse.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import struct
from collections.abc import Callable, Mapping
from typing import Any

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.headers import decode_response, encode_request
from sparklog.protocol.messages import API_BY_KEY, API_BY_NAME
from sparklog.protocol.schema import Api
from sparklog.protocol.types import join_chunks
from sparklog.security.client_security import ClientSecurity

_SIZE = struct.Struct(">i")


class KafkaConnection:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "sparklog-cli",
        timeout_s: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        authenticate: Callable[[KafkaConnection], None] | None = None,
        security: ClientSecurity | None = None,
    ) -> None:
        if security is not None:
            ssl_context = ssl_context or security.ssl_context
            if authenticate is None and security.uses_sasl:
                authenticate = _sasl_login(security)
        self.host = host
        self.port = port
        self.client_id = client_id
        sock = socket.create_connection((host, port), timeout=timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        self._sock = sock
        self._correlation = itertools.count(1)
        self.versions: dict[int, tuple[int, int]] = {}
        response = self.request(
            "ApiVersions",
            {"client_software_name": "sparklog", "client_software_version": "0.1.0"},
            version=3,
        )
        if response["error_code"] != 0:
            raise ProtocolError(f"ApiVersions failed with error {response['error_code']}")
        self.versions = {
            k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]
        }
        if authenticate is not None:
            # SASL (sparklog.security.sasl_client) runs before any other request.
            authenticate(self)

    @classmethod
    def connect(cls, bootstrap: str, **options: Any) -> KafkaConnection:
        host, _, port = bootstrap.rpartition(":")
        return cls(host or "localhost", int(port), **options)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version_for(self, api: Api) -> int:
        theirs = self.versions.get(api.key)
        if theirs is None:
            raise ProtocolError(f"the server does not support {api.name}")
        low, high = max(theirs[0], api.min_version), min(theirs[1], api.max_version)
        if low > high:
            raise ProtocolError(f"no common version of {api.name}")
        return high

    def request(self, api_name: str, body: Mapping[str, Any], version: int | None = None) -> Any:
        api = API_BY_NAME[api_name]
        if version is None:
            version = self.version_for(api)
        correlation_id = next(self._correlation)
        chunks = encode_request(api, version, correlation_id, self.client_id, body)
        self._sock.sendall(join_chunks(chunks))
        frame = self._read_frame()
        got_id, response = decode_response(api, version, frame)
        if got_id != correlation_id:
            raise ProtocolError(f"correlation id {got_id} != {correlation_id}")
        return response

    def _read_exact(self, size: int) -> bytes:
        buf = bytearray()
        while len(buf) < size:
            chunk = self._sock.recv(min(size - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError(f"{self.host}:{self.port} closed the connection")
            buf += chunk
        return bytes(buf)

    def _read_frame(self) -> memoryview:
        (size,) = _SIZE.unpack(self._read_exact(4))
        if size < 0:
            raise ProtocolError(f"invalid response size {size}")
        return memoryview(self._read_exact(size))


def _sasl_login(security: ClientSecurity) -> Callable[[KafkaConnection], None]:
    def login(conn: KafkaConnection) -> None:
        security.authenticate_blocking(
            lambda api, body, version: conn.request(api, body, version=version)
        )

    return login


__all__ = ["API_BY_KEY", "KafkaConnection"]
