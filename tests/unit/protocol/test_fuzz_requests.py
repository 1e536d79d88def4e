"""Fuzz: random and mutated frames through FrameDecoder + decode_request (and responses through
decode_response). The only exception the parser may raise is ProtocolError; anything else
(IndexError, struct.error, UnicodeDecodeError, RecursionError, ...) is a bug."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.framing import FrameDecoder, frame_size_prefix
from sparklog.protocol.headers import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from sparklog.protocol.messages import API_BY_KEY
from sparklog.protocol.schema import Api
from sparklog.protocol.types import MAX_TAGGED_FIELDS, join_chunks, uvarint_bytes
from tests.unit.protocol.message_strategies import message_strategy

VERSIONED = [(a, v) for a in API_BY_KEY.values() for v in range(a.min_version, a.max_version + 1)]


def _parse_stream(stream: bytes, chunk: int) -> int:
    """Feed ``stream`` in chunks and parse every frame; return how many frames parsed."""
    decoder = FrameDecoder(max_frame_bytes=1 << 16)
    parsed = 0
    try:
        for start in range(0, len(stream), chunk):
            decoder.receive_data(stream[start : start + chunk])
            while (frame := decoder.next_frame()) is not None:
                try:
                    decode_request(frame, API_BY_KEY)
                    parsed += 1
                except ProtocolError:
                    pass
    except ProtocolError:
        pass  # a bad size prefix: the connection would be closed
    return parsed


@st.composite
def valid_request_frames(draw: st.DrawFn) -> tuple[Api, int, bytes]:
    api, version = draw(st.sampled_from(VERSIONED))
    body = draw(message_strategy(api.request, version))
    client_id = draw(st.none() | st.text(max_size=8))
    frame = join_chunks(
        encode_request(api, version, draw(st.integers(0, 2**31 - 1)), client_id, body)
    )
    return api, version, frame[4:]


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        position = draw(st.integers(0, max(len(out) - 1, 0)))
        if kind == "flip" and out:
            out[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and out:
            out[position] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]))
        elif kind == "insert":
            out[position:position] = draw(st.binary(min_size=1, max_size=6))
        elif kind == "delete" and out:
            del out[position : position + draw(st.integers(1, 4))]
        elif kind == "truncate":
            del out[position:]
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(stream=st.binary(max_size=300), chunk=st.integers(1, 64))
def test_random_streams(stream: bytes, chunk: int) -> None:
    _parse_stream(stream, chunk)


@settings(max_examples=300, deadline=None)
@given(frame=st.binary(max_size=200), api=st.sampled_from(VERSIONED))
def test_random_bodies_behind_a_valid_header(frame: bytes, api: tuple[Api, int]) -> None:
    a, version = api
    header = a.key.to_bytes(2, "big") + version.to_bytes(2, "big") + b"\x00\x00\x00\x01\xff\xff"
    if a.request_header_version(version) >= 2:
        header += b"\x00"
    with contextlib.suppress(ProtocolError):
        decode_request(header + frame, API_BY_KEY)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_valid_frames(data: st.DataObject) -> None:
    _, version, frame = data.draw(valid_request_frames())
    assert decode_request(frame, API_BY_KEY).header.api_version == version
    bad = data.draw(mutated(frame))
    with contextlib.suppress(ProtocolError):
        decode_request(bad, API_BY_KEY)
    # The same mutation inside a stream of frames, with a correct and a mutated size prefix.
    stream = frame_size_prefix(len(bad)) + bad + frame_size_prefix(len(frame)) + frame
    _parse_stream(stream, data.draw(st.integers(1, 512)))
    _parse_stream(data.draw(mutated(stream)), 7)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_responses(data: st.DataObject) -> None:
    api, version = data.draw(st.sampled_from(VERSIONED))
    body: dict[str, Any] = data.draw(message_strategy(api.response, version))
    frame = join_chunks(encode_response(api, version, 3, body))[4:]
    assert decode_response(api, version, frame)[0] == 3
    bad = data.draw(mutated(frame))
    with contextlib.suppress(ProtocolError):
        decode_response(api, version, bad)


# Kafka 4.4's count limits hold for every flexible request we declare: the body of an
# all-defaults request ends with its top-level tagged-field count (0), replaced here.
FLEXIBLE = [(a, v) for a, v in VERSIONED if a.request.is_flexible(v)]


def _with_top_level_tags(api: Api, version: int, count: int) -> bytes:
    frame = join_chunks(encode_request(api, version, 5, "fuzz", {}))[4:]
    assert frame[-1] == 0
    tags = b"".join(uvarint_bytes(1000 + i) + b"\x00" for i in range(count))
    return frame[:-1] + uvarint_bytes(count) + tags


@pytest.mark.parametrize(("api", "version"), FLEXIBLE, ids=lambda x: str(getattr(x, "name", x)))
def test_tagged_field_limit_in_every_flexible_request(api: Api, version: int) -> None:
    decode_request(_with_top_level_tags(api, version, MAX_TAGGED_FIELDS), API_BY_KEY)
    with pytest.raises(ProtocolError, match="tagged fields exceed"):
        decode_request(_with_top_level_tags(api, version, MAX_TAGGED_FIELDS + 1), API_BY_KEY)
