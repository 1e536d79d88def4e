"""Request/response headers and whole frames, with golden bytes derived from the Kafka spec."""

from __future__ import annotations

import pytest

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.headers import (
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    unsupported_api_versions_response,
)
from sparklog.protocol.messages import API_BY_KEY, API_BY_NAME, supported_api_keys
from sparklog.protocol.schema import api, field, message
from sparklog.protocol.types import join_chunks

API_VERSIONS = API_BY_KEY[18]

# ApiVersions v3 request, correlation id 7, client id "cli": header v2 (client_id is a classic
# int16-length string even in v2, then an empty tag section), compact strings in the body.
API_VERSIONS_V3_REQUEST = bytes.fromhex(
    "0000001c"  # size 28
    "0012"
    "0003"
    "00000007"
    "0003"
    "636c69"
    "00"  # header v2
    "09"
    "737061726b6c6f67"
    "04"
    "302e31"
    "00"  # "sparklog", "0.1", no tags
)


def test_decode_api_versions_v3_request_golden() -> None:
    request = decode_request(memoryview(API_VERSIONS_V3_REQUEST)[4:], API_BY_KEY)
    assert request.header == RequestHeader(18, 3, 7, "cli")
    assert request.api is API_VERSIONS
    assert request.body == {"client_software_name": "sparklog", "client_software_version": "0.1"}


def test_encode_api_versions_v3_request_golden() -> None:
    body = {"client_software_name": "sparklog", "client_software_version": "0.1"}
    chunks = encode_request(API_VERSIONS, 3, 7, "cli", body)
    assert join_chunks(chunks) == API_VERSIONS_V3_REQUEST


def test_api_versions_v0_response_frame_golden() -> None:
    body = {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    frame = join_chunks(encode_response(API_VERSIONS, 0, 7, body))
    expected = bytes.fromhex("0000001000000007000000000001001200000004")
    assert frame == expected
    assert decode_response(API_VERSIONS, 0, frame[4:]) == (7, {**body, **_v0_defaults()})


def _v0_defaults() -> dict[str, object]:
    return {
        "throttle_time_ms": 0,
        "supported_features": [],
        "finalized_features_epoch": -1,
        "finalized_features": [],
        "zk_migration_ready": False,
    }


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    frame = join_chunks(encode_response(API_VERSIONS, 3, 9, {"api_keys": []}))
    # size, correlation id, then straight into the body: no header tag section.
    assert frame[4:8] == b"\x00\x00\x00\x09"
    assert frame[8:] == bytes.fromhex("0000010000000000")


FLEX = api(
    1000,
    "TestFlexible",
    "0-1",
    message("TestFlexibleRequest", "0-1", "1+", field("x", "int32")),
    message("TestFlexibleResponse", "0-1", "1+", field("y", "string")),
)


def test_flexible_headers_have_tag_sections() -> None:
    request = join_chunks(encode_request(FLEX, 1, 5, None, {"x": 3}))
    assert request == bytes.fromhex("0000001003e8000100000005ffff000000000300")
    parsed = decode_request(request[4:], {1000: FLEX})
    assert parsed.header.client_id is None
    assert parsed.body == {"x": 3}
    # A header tag section with an unknown tag is skipped.
    with_tag = request[4:14] + b"\x01\x07\x02zz" + request[15:]
    assert decode_request(with_tag, {1000: FLEX}).body == {"x": 3}

    response = join_chunks(encode_response(FLEX, 1, 5, {"y": "ok"}))
    assert response == bytes.fromhex("000000090000000500036f6b00")
    assert decode_response(FLEX, 1, response[4:]) == (5, {"y": "ok"})
    classic = join_chunks(encode_response(FLEX, 0, 5, {"y": "ok"}))
    assert classic == bytes.fromhex("000000080000000500026f6b")


def test_unknown_api_key_raises_unsupported_version() -> None:
    frame = bytes.fromhex("7fff00000000002a0000")
    with pytest.raises(UnsupportedVersion) as info:
        decode_request(frame, API_BY_KEY)
    assert info.value.header == RequestHeader(0x7FFF, 0, 42, "")
    assert not info.value.answer_with_api_versions
    assert isinstance(info.value, ProtocolError)


def test_unsupported_version_raises_with_header() -> None:
    frame = bytes.fromhex("03e8000500000001ffff")
    with pytest.raises(UnsupportedVersion) as info:
        decode_request(frame, {1000: FLEX})
    assert info.value.header.api_version == 5


def test_too_new_api_versions_request_is_answered_as_v0() -> None:
    frame = bytes.fromhex("001200630000000b00017801020304")  # v99, junk body
    with pytest.raises(UnsupportedVersion) as info:
        decode_request(frame, API_BY_KEY)
    assert info.value.answer_with_api_versions
    header = info.value.header
    response = join_chunks(unsupported_api_versions_response(header.correlation_id, API_BY_KEY))
    correlation_id, body = decode_response(API_VERSIONS, 0, response[4:])
    assert correlation_id == 11
    assert body["error_code"] == 35
    assert {"api_key": 18, "min_version": 0, "max_version": 4} in body["api_keys"]
    assert len(body["api_keys"]) == len(API_BY_KEY)
    # v0 layout: size, correlation id, error code 35, int32 array count.
    assert response[8:10] == b"\x00\x23"
    assert int.from_bytes(response[10:14], "big") == len(API_BY_KEY)


def test_truncated_request_frames_are_protocol_errors() -> None:
    frame = API_VERSIONS_V3_REQUEST[4:]
    for cut in range(len(frame)):
        with pytest.raises(ProtocolError):
            decode_request(frame[:cut], API_BY_KEY)


def test_trailing_bytes_after_a_request_body_are_ignored_as_kafka_does() -> None:
    # librdkafka 2.x sends Metadata v13 with three bytes past the declared fields.
    frame = API_VERSIONS_V3_REQUEST[4:]
    assert decode_request(frame + b"\x01\x00\x00", API_BY_KEY).body == (
        decode_request(frame, API_BY_KEY).body
    )


def test_registry() -> None:
    assert API_BY_NAME["ApiVersions"] is API_VERSIONS
    assert all(key == a.key for key, a in API_BY_KEY.items())
    keys = supported_api_keys("broker")
    assert keys == sorted(keys, key=lambda entry: entry["api_key"])
    assert {"api_key": 18, "min_version": 0, "max_version": 4} in keys
    assert {"api_key": 18, "min_version": 0, "max_version": 4} in supported_api_keys("controller")
    assert supported_api_keys("no-such-listener") == []
