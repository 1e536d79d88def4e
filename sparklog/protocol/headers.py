"""Request and response headers, and whole request/response frames.

Contract:
- Request header v1: api_key int16, api_version int16, correlation_id int32, client_id nullable
  string (int16 length, NOT compact even in v2); v2 adds a tagged-field section. Response
  header v0 is the correlation_id; v1 adds a tagged-field section. Which version applies is the
  Api's choice (``Api.request_header_version`` / ``response_header_version``); v0 request
  headers (no client_id) belong to ControlledShutdown v0 only, which no Kafka 4.x server serves.
- :func:`decode_request` takes one frame (without its size prefix) and returns the parsed
  :class:`Request`, or raises :class:`ProtocolError`: the caller closes the connection. An
  unknown API key or a version we do not serve raises :class:`UnsupportedVersion` carrying
  the header, with one exception mandated by Kafka so clients can negotiate: an ApiVersions
  request of a version we do not serve must be answered, as ApiVersions v0 with error
  UNSUPPORTED_VERSION and our version ranges (:func:`unsupported_api_versions_response`).
- Encoders return chunks INCLUDING the 4-byte big-endian size prefix, ready to write.
- :class:`TypedRequest` is generic in its body so a handler can declare the body's TypedDict
  (``TypedRequest[ProduceRequest]``, :mod:`sparklog.protocol.message_types`); at run time the
  body is the codec's plain dict either way. :data:`Request` is the untyped alias.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sparklog.protocol.codec import Chunks, decode_from, encode_into
from sparklog.protocol.errors import ErrorCode, ProtocolError
from sparklog.protocol.message_types import ApiKey
from sparklog.protocol.schema import Api
from sparklog.protocol.types import INT32, BytesLike, Reader, Writer

API_VERSIONS_KEY = ApiKey.API_VERSIONS


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


BodyT = TypeVar("BodyT", covariant=True)


@dataclass(frozen=True, slots=True)
class TypedRequest(Generic[BodyT]):
    """A decoded request; ``BodyT`` is the TypedDict of ``api``'s request declaration."""

    header: RequestHeader
    api: Api
    body: BodyT


# A request whose body is not typed (yet): what decode_request returns. At run time it is the
# class itself (calling a subscripted frozen slots dataclass fails setting __orig_class__).
if TYPE_CHECKING:
    Request = TypedRequest[dict[str, Any]]
else:
    Request = TypedRequest


class UnsupportedVersion(ProtocolError):
    """The request names an API key or version this listener does not serve."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(message)
        self.header = header

    @property
    def answer_with_api_versions(self) -> bool:
        """True for an ApiVersions request, which Kafka answers rather than disconnecting."""
        return self.header.api_key == API_VERSIONS_KEY


def _skip_tagged_fields(reader: Reader) -> None:
    # No header tagged fields are defined (Kafka's are for KIP-590 forwarding only).
    for _ in range(reader.tagged_field_count()):
        reader.uvarint()
        reader.skip(reader.uvarint())


def decode_request(frame: BytesLike, apis: Mapping[int, Api]) -> Request:
    """Parse a request frame (header and body); see the module contract for errors."""
    reader = Reader(frame)
    api_key = reader.int16()
    api_version = reader.int16()
    correlation_id = reader.int32()
    client_id = reader.nullable_string()
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    api = apis.get(api_key)
    if api is None:
        raise UnsupportedVersion(header, f"unknown or disabled api key {api_key}")
    if not api.supports(api_version):
        raise UnsupportedVersion(
            header,
            f"{api.name} v{api_version} is not supported "
            f"(versions {api.min_version}-{api.max_version})",
        )
    if api.request_header_version(api_version) >= 2:
        _skip_tagged_fields(reader)
    body = decode_from(api.request, api_version, reader)
    # Bytes after the body are ignored, as Kafka's generated readers do: librdkafka 2.x sends
    # Metadata v13 requests with three bytes past the declared fields, and Kafka answers them.
    return TypedRequest(header, api, body)


def _finish_frame(writer: Writer) -> Chunks:
    """Fill in the 4-byte size placeholder at the start of ``writer``."""
    size = writer.size - 4
    INT32.pack_into(writer.first_buffer(), 0, size)
    return writer.chunks()


def encode_response(api: Api, version: int, correlation_id: int, body: Mapping[str, Any]) -> Chunks:
    """A response frame: size prefix, response header, body."""
    writer = Writer()
    writer.int32(0)
    writer.int32(correlation_id)
    if api.response_header_version(version) >= 1:
        writer.uvarint(0)
    encode_into(api.response, version, body, writer)
    return _finish_frame(writer)


def encode_request(
    api: Api,
    version: int,
    correlation_id: int,
    client_id: str | None,
    body: Mapping[str, Any],
) -> Chunks:
    """A request frame (client side): size prefix, request header, body."""
    writer = Writer()
    writer.int32(0)
    writer.int16(api.key)
    writer.int16(version)
    writer.int32(correlation_id)
    writer.nullable_string(client_id)
    if api.request_header_version(version) >= 2:
        writer.uvarint(0)
    encode_into(api.request, version, body, writer)
    return _finish_frame(writer)


def decode_response(api: Api, version: int, frame: BytesLike) -> tuple[int, dict[str, Any]]:
    """Parse a response frame (without its size prefix): ``(correlation_id, body)``."""
    reader = Reader(frame)
    correlation_id = reader.int32()
    if api.response_header_version(version) >= 1:
        _skip_tagged_fields(reader)
    body = decode_from(api.response, version, reader)
    if reader.pos != reader.end:
        raise ProtocolError(
            f"{api.name} v{version} response: {reader.end - reader.pos} trailing bytes"
        )
    return correlation_id, body


def unsupported_api_versions_response(correlation_id: int, apis: Mapping[int, Api]) -> Chunks:
    """ApiVersions v0 answering a too-new ApiVersions request: UNSUPPORTED_VERSION plus our
    version ranges, so the client retries with a version we serve."""
    api_versions = apis.get(API_VERSIONS_KEY)
    if api_versions is None:
        raise ValueError("the api map must include ApiVersions")
    body = {
        "error_code": int(ErrorCode.UNSUPPORTED_VERSION),
        "api_keys": [
            {"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
            for a in sorted(apis.values(), key=lambda a: a.key)
        ],
    }
    return encode_response(api_versions, 0, correlation_id, body)
