"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks it; sans-IO.

Contract:
- :class:`ScramCredential` is what the server stores per (user, mechanism), exactly Kafka's
  UserScramCredentialRecord: salt, StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
  HMAC(SaltedPassword, "Server Key"), iterations. SaltedPassword = PBKDF2-HMAC(password, salt,
  iterations) (RFC 5802's Hi); the password is the UTF-8 bytes, unnormalised, as Kafka's
  ScramFormatter does. Iterations are 4096..16384 (Kafka's ScramMechanism bounds).
- :class:`ScramServer` takes the client's two messages and returns the server's two, or raises
  :class:`ScramError` (wrong proof, unknown user, a malformed or out-of-order message, a
  ``tokenauth`` extension: we have no delegation tokens). An unknown user fails at the first
  message, a wrong password at the second; both are an authentication failure to the client.
- :class:`ScramClient` is the other side, for this node's own connections and tools.
- Nothing here logs, and no error text contains a password, key or proof.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
# Kafka's ScramMechanism type codes (UserScramCredentialRecord.Mechanism).
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {code: name for name, code in MECHANISM_TYPES.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ScramError(Exception):
    """Authentication failed, or the peer broke the exchange; the message is safe to show."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


def _hash_name(mechanism: str) -> str:
    try:
        return _HASHES[mechanism]
    except KeyError:
        raise ScramError(f"unsupported SCRAM mechanism {mechanism}") from None


def _hmac(name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(_hash_name(mechanism), password.encode(), salt, iterations)


def credential_from_salted_password(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    name = _hash_name(mechanism)
    client_key = _hmac(name, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(name, client_key).digest(),
        server_key=_hmac(name, salted, b"Server Key"),
        iterations=iterations,
    )


def make_credential(
    mechanism: str, password: str, *, salt: bytes | None = None, iterations: int = MIN_ITERATIONS
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted_password(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
    )


def _sasl_name_decode(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise ScramError("invalid SCRAM user name encoding")
    return name.replace("=2C", ",").replace("=3D", "=")


def _sasl_name_encode(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


_CLIENT_FIRST = re.compile(
    r"(?P<gs2>[ny],(?:a=(?P<authzid>[^,]*))?,)"
    r"(?P<bare>n=(?P<name>[^,]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?P<ext>(?:,[a-z]+=[^,]*)*))"
)
_CLIENT_FINAL = re.compile(
    r"(?P<without_proof>c=(?P<binding>[A-Za-z0-9+/=]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
    r"(?:,[a-z]+=[^,]*)*),p=(?P<proof>[A-Za-z0-9+/=]+)"
)

CredentialLookup = Callable[[str], "ScramCredential | None"]


class ScramServer:
    """One server-side exchange. ``lookup(user)`` returns the user's credential or None."""

    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        self._hash = _hash_name(mechanism)
        self._lookup = lookup
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._auth_prefix = ""
        self.username: str | None = None  # set when the exchange succeeded

    @property
    def complete(self) -> bool:
        return self._state == "done"

    def respond(self, message: bytes) -> bytes:
        if self._state == "first":
            return self._first(message)
        if self._state == "final":
            return self._final(message)
        raise ScramError("unexpected SCRAM message after the exchange ended")

    def _first(self, message: bytes) -> bytes:
        self._state = "failed"
        match = _CLIENT_FIRST.fullmatch(message.decode("utf-8", "replace"))
        if match is None:
            raise ScramError("invalid SCRAM client-first message")
        for extension in filter(None, match["ext"].split(",")):
            if extension.startswith("tokenauth="):
                raise ScramError("delegation token authentication is not supported")
        username = _sasl_name_decode(match["name"])
        if match["authzid"] and _sasl_name_decode(match["authzid"]) != username:
            raise ScramError("authorization id does not match the user name")
        credential = self._lookup(username)
        if credential is None:
            raise ScramError("invalid user credentials")
        self._credential = credential
        self._pending_user = username
        self._nonce = match["nonce"] + secrets.token_urlsafe(24)
        server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        self._auth_prefix = f"{match['bare']},{server_first},"
        self._state = "final"
        return server_first.encode()

    def _final(self, message: bytes) -> bytes:
        self._state = "failed"
        credential = self._credential
        assert credential is not None
        match = _CLIENT_FINAL.fullmatch(message.decode("utf-8", "replace"))
        if match is None:
            raise ScramError("invalid SCRAM client-final message")
        # Kafka's check (ScramSaslServer): the nonce ends with ours. Older librdkafka versions
        # repeat their own nonce in front; the proof still covers the exact text.
        if not match["nonce"].endswith(self._nonce):
            raise ScramError("invalid SCRAM nonce")
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except ValueError:
            raise ScramError("invalid SCRAM client-final message") from None
        auth_message = (self._auth_prefix + match["without_proof"]).encode()
        signature = _hmac(self._hash, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid user credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(self._hash, client_key).digest(), credential.stored_key
        ):
            raise ScramError("invalid user credentials")
        server_signature = _hmac(self._hash, credential.server_key, auth_message)
        self.username = self._pending_user
        self._state = "done"
        return b"v=" + base64.b64encode(server_signature)


class ScramClient:
    """One client-side exchange: :meth:`first`, then :meth:`final`, then :meth:`verify`."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self._hash = _hash_name(mechanism)
        self.mechanism = mechanism
        self._password = password
        self._nonce = secrets.token_urlsafe(24)
        self._bare = f"n={_sasl_name_encode(username)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", "replace")
        parts = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        nonce, salt_b64, iterations = parts.get("r", ""), parts.get("s", ""), parts.get("i", "")
        if not nonce.startswith(self._nonce) or not iterations.isdigit():
            raise ScramError("invalid SCRAM server-first message")
        iteration_count = int(iterations)
        if not MIN_ITERATIONS <= iteration_count <= MAX_ITERATIONS:
            raise ScramError("SCRAM iteration count out of range")
        salt = base64.b64decode(salt_b64)
        salted = hashlib.pbkdf2_hmac(self._hash, self._password.encode(), salt, iteration_count)
        client_key = _hmac(self._hash, salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = _hmac(self._hash, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = _hmac(self._hash, salted, b"Server Key")
        self._server_signature = _hmac(self._hash, server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode("utf-8", "replace")
        if text.startswith("e="):
            raise ScramError(f"SCRAM authentication failed: {text[2:]}")
        if not text.startswith("v=") or not hmac.compare_digest(
            base64.b64decode(text[2:]), self._server_signature
        ):
            raise ScramError("invalid SCRAM server signature")
