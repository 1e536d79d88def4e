"""Codec semantics on hand-derived bytes: compact vs classic encodings, nullability, tagged
fields (omission of defaults, unknown tags, ordering), records zero-copy, and the split
between the peer's errors (ProtocolError) and ours (EncodeError, a ValueError)."""

from __future__ import annotations

import pytest

from sparklog.protocol import codec
from sparklog.protocol.codec import EncodeError
from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.messages.api_versions import RESPONSE as API_VERSIONS_RESPONSE
from sparklog.protocol.schema import array, field, message, struct
from sparklog.protocol.types import (
    MAX_ARRAY_ELEMENTS,
    MAX_TAGGED_FIELDS,
    join_chunks,
    uvarint_bytes,
)

# A declaration exercising every type, independent of the real API declarations.
SPEC = message(
    "TestMessage",
    "0-3",
    "2+",
    field("i8", "int8"),
    field("flag", "bool"),
    field("u16", "uint16", "1+"),
    field("name", "string"),
    field("maybe_name", "string", nullable="0+", default=None),
    field("blob", "bytes", "0+", nullable="1+"),
    field("id", "uuid", "1+"),
    field("ratio", "float64", "3+"),
    field("ids", "[]int32"),
    field("records", "records", nullable="0+"),
    array("items", field("k", "int32"), field("v", "string", nullable="0+", default=None)),
    struct("leader", field("id", "int32", default=-1), field("epoch", "int32"), nullable="1+"),
    field("trace", "int64", "2+", tag=0, default=-1),
    field("note", "string", "2+", tag=5, nullable="2+", default=None),
    array("extras", field("x", "int16"), versions="2+", tag=1),
)


def test_classic_encoding_v0() -> None:
    msg = {
        "i8": -1,
        "flag": True,
        "name": "ab",
        "maybe_name": None,
        "blob": b"\x01",
        "ids": [1, 2],
        "records": b"RR",
        "items": [{"k": 7, "v": None}],
        "leader": {"id": 3, "epoch": 4},
    }
    expected = (
        b"\xff"  # i8
        b"\x01"  # flag
        b"\x00\x02ab"  # name: int16 length
        b"\xff\xff"  # maybe_name: null
        b"\x00\x00\x00\x01\x01"  # blob: int32 length
        b"\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02"  # ids
        b"\x00\x00\x00\x02RR"  # records
        b"\x00\x00\x00\x01\x00\x00\x00\x07\xff\xff"  # items
        b"\x00\x00\x00\x03\x00\x00\x00\x04"  # leader: not nullable in v0, so no marker
    )
    assert codec.encode_bytes(SPEC, 0, msg) == expected
    decoded = codec.decode(SPEC, 0, expected)
    assert decoded == {
        **msg,
        "u16": 0,
        "id": b"\x00" * 16,
        "ratio": 0.0,
        "trace": -1,
        "note": None,
        "extras": [],
    }


def test_flexible_encoding_v2() -> None:
    msg = {
        "i8": 1,
        "flag": False,
        "u16": 0xFFFF,
        "name": "ab",
        "maybe_name": "c",
        "blob": None,
        "id": bytes(range(16)),
        "ids": [],
        "records": None,
        "items": [{"k": 1, "v": "z"}],
        "leader": None,
        "trace": 9,
        "note": None,  # default: omitted
        "extras": [{"x": 2}],
    }
    expected = (
        b"\x01\x00\xff\xff"
        b"\x03ab"  # compact string: length + 1
        b"\x02c"
        b"\x00" + bytes(range(16)) + b"\x01"  # nullable bytes: null is 0  # empty compact array
        b"\x00"  # null records
        b"\x02\x00\x00\x00\x01\x02z\x00"  # items: one element, its own empty tag section
        b"\xff"  # null struct marker
        b"\x02"  # two tagged fields, ascending tag order
        b"\x00\x08\x00\x00\x00\x00\x00\x00\x00\x09"  # tag 0: trace
        b"\x01\x04\x02\x00\x02\x00"  # tag 1: extras = compact array [x=2, tags=0]
    )
    assert codec.encode_bytes(SPEC, 2, msg) == expected
    assert codec.decode(SPEC, 2, expected) == {**msg, "ratio": 0.0}


def test_nullable_struct_marker() -> None:
    base = codec.decode(SPEC, 1, codec.encode_bytes(SPEC, 1, {}))
    present = codec.encode_bytes(SPEC, 1, {**base, "leader": {"id": 1, "epoch": 2}})
    absent = codec.encode_bytes(SPEC, 1, {**base, "leader": None})
    assert present.endswith(b"\x01\x00\x00\x00\x01\x00\x00\x00\x02")
    assert absent.endswith(b"\xff")
    assert codec.decode(SPEC, 1, absent)["leader"] is None


def test_missing_non_nullable_struct_takes_field_defaults() -> None:
    decoded = codec.decode(SPEC, 0, codec.encode_bytes(SPEC, 0, {}))
    assert decoded["leader"] == {"id": -1, "epoch": 0}


def test_tagged_defaults_are_omitted() -> None:
    encoded = codec.encode_bytes(SPEC, 2, {"trace": -1, "note": None, "extras": []})
    assert encoded.endswith(b"\x00")
    with_note = codec.encode_bytes(SPEC, 2, {"note": "n"})
    assert with_note.endswith(b"\x01\x05\x02\x02n")
    assert codec.decode(SPEC, 2, with_note)["note"] == "n"


def test_unknown_tags_are_skipped() -> None:
    encoded = codec.encode_bytes(SPEC, 2, {"trace": 5})
    assert encoded.endswith(b"\x01\x00\x08" + (5).to_bytes(8, "big"))
    # Add tag 9 (unknown, 3 bytes) after tag 0.
    extended = encoded[:-11] + b"\x02\x00\x08" + (5).to_bytes(8, "big") + b"\x09\x03abc"
    assert codec.decode(SPEC, 2, extended)["trace"] == 5


def test_tagged_field_size_must_match_its_value() -> None:
    encoded = codec.encode_bytes(SPEC, 2, {"trace": 5})
    too_long = encoded[:-11] + b"\x01\x00\x09" + (5).to_bytes(8, "big") + b"\x00"
    with pytest.raises(ProtocolError):
        codec.decode(SPEC, 2, too_long)
    beyond_end = encoded[:-11] + b"\x01\x00\x7f" + (5).to_bytes(8, "big")
    with pytest.raises(ProtocolError):
        codec.decode(SPEC, 2, beyond_end)


def test_null_for_non_nullable_is_a_protocol_error() -> None:
    encoded = bytearray(codec.encode_bytes(SPEC, 0, {"name": ""}))
    assert encoded[2:4] == b"\x00\x00"
    encoded[2:4] = b"\xff\xff"
    with pytest.raises(ProtocolError):
        codec.decode(SPEC, 0, bytes(encoded))


def test_invalid_utf8_is_a_protocol_error() -> None:
    encoded = bytearray(codec.encode_bytes(SPEC, 0, {"name": "ab"}))
    encoded[4:6] = b"\xc3\x28"
    with pytest.raises(ProtocolError, match="UTF-8"):
        codec.decode(SPEC, 0, bytes(encoded))


def test_array_length_beyond_buffer_is_a_protocol_error() -> None:
    encoded = bytearray(codec.encode_bytes(SPEC, 0, {}))
    # ids array count sits after i8, flag, name, maybe_name, blob.
    offset = 1 + 1 + 2 + 2 + 4
    assert encoded[offset : offset + 4] == b"\x00\x00\x00\x00"
    encoded[offset : offset + 4] = b"\x7f\xff\xff\xff"
    with pytest.raises(ProtocolError):
        codec.decode(SPEC, 0, bytes(encoded))
    encoded[offset : offset + 4] = b"\xff\xff\xff\xfe"
    with pytest.raises(ProtocolError):
        codec.decode(SPEC, 0, bytes(encoded))


@pytest.mark.parametrize(
    "bad",
    [
        {"name": None},
        {"i8": 1000},
        {"flag": None},
        {"ids": None},
        {"id": b"short"},
        {"items": [{"k": None}]},
        {"items": [None]},
        {"leader": None},  # not nullable in v0
        {"trace": "x"},
    ],
)
def test_our_bugs_raise_value_error(bad: dict[str, object]) -> None:
    version = 2 if "trace" in bad else 0
    if "id" in bad:
        version = 1
    with pytest.raises(EncodeError) as info:
        codec.encode_bytes(SPEC, version, bad)
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, ProtocolError)


def test_unknown_version_is_our_bug() -> None:
    with pytest.raises(ValueError):
        codec.encode_bytes(SPEC, 4, {})


def test_records_decode_zero_copy() -> None:
    payload = b"B" * 100
    encoded = bytearray(codec.encode_bytes(SPEC, 0, {"records": payload}))
    decoded = codec.decode(SPEC, 0, encoded)["records"]
    assert isinstance(decoded, memoryview)
    assert decoded == payload
    assert decoded.obj is encoded  # a view into the input, not a copy
    encoded[encoded.index(b"B")] = ord("C")
    assert decoded[0] == ord("C")


def test_large_records_pass_through_uncopied() -> None:
    big = memoryview(bytearray(b"x" * 100_000))
    chunks = codec.encode(SPEC, 2, {"records": big})
    assert any(chunk is big for chunk in chunks)
    parts = [b"a" * 10_000, memoryview(b"b" * 20_000), b"c"]
    chunks = codec.encode(SPEC, 2, {"records": parts})
    joined = join_chunks(chunks)
    decoded = codec.decode(SPEC, 2, joined)["records"]
    assert decoded == b"a" * 10_000 + b"b" * 20_000 + b"c"
    assert any(chunk is parts[1] for chunk in chunks)


def test_api_versions_v0_response_golden() -> None:
    body = {
        "error_code": 0,
        "api_keys": [
            {"api_key": 0, "min_version": 3, "max_version": 13},
            {"api_key": 18, "min_version": 0, "max_version": 4},
        ],
    }
    expected = bytes.fromhex("00000000000200000003000d001200000004")
    assert codec.encode_bytes(API_VERSIONS_RESPONSE, 0, body) == expected


def test_api_versions_v3_response_tagged_golden() -> None:
    body: dict[str, object] = {"api_keys": [{"api_key": 1, "min_version": 4, "max_version": 17}]}
    plain = bytes.fromhex("000002000100040011000000000000")
    assert codec.encode_bytes(API_VERSIONS_RESPONSE, 3, body) == plain
    body["finalized_features_epoch"] = 1
    body["zk_migration_ready"] = True
    tagged = plain[:-1] + bytes.fromhex("0201080000000000000001030101")
    assert codec.encode_bytes(API_VERSIONS_RESPONSE, 3, body) == tagged
    assert codec.decode(API_VERSIONS_RESPONSE, 3, tagged)["zk_migration_ready"] is True


# Kafka 4.4's deserialization limits: counts are refused when read, before any element is built.
ARRAYS = message(
    "LimitMessage",
    "0-1",
    "1+",
    field("bytes_", "[]int8"),
    array("items", field("k", "int8")),
)


def _classic_int8_array(count: int) -> bytes:
    return count.to_bytes(4, "big") + b"\x00" * count


def test_array_of_exactly_the_limit_decodes() -> None:
    data = _classic_int8_array(MAX_ARRAY_ELEMENTS) + (0).to_bytes(4, "big")
    assert len(codec.decode(ARRAYS, 0, data)["bytes_"]) == MAX_ARRAY_ELEMENTS


@pytest.mark.parametrize("version", [0, 1])
def test_array_over_the_limit_is_refused_before_decoding(version: int) -> None:
    count = MAX_ARRAY_ELEMENTS + 1
    head = count.to_bytes(4, "big") if version == 0 else uvarint_bytes(count + 1)
    # Enough bytes behind the count, so only the element bound can refuse it.
    data = head + b"\x00" * (count + 8)
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        codec.decode(ARRAYS, version, data)
    # A struct array is bounded the same way.
    nested = _classic_int8_array(0) + count.to_bytes(4, "big") + b"\x00" * count
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        codec.decode(ARRAYS, 0, nested)


def _with_unknown_tags(count: int) -> bytes:
    # v1 body: empty compact bytes_, empty items, then `count` unknown empty tags (tag 100+i).
    tags = b"".join(uvarint_bytes(100 + i) + b"\x00" for i in range(count))
    return b"\x01\x01" + uvarint_bytes(count) + tags


def test_tagged_fields_up_to_the_limit_decode() -> None:
    assert codec.decode(ARRAYS, 1, _with_unknown_tags(MAX_TAGGED_FIELDS))["bytes_"] == []


def test_more_tagged_fields_than_the_limit_are_refused() -> None:
    with pytest.raises(ProtocolError, match="tagged fields exceed"):
        codec.decode(ARRAYS, 1, _with_unknown_tags(MAX_TAGGED_FIELDS + 1))


def test_request_header_tagged_fields_are_bounded() -> None:
    from sparklog.protocol.headers import decode_request
    from sparklog.protocol.messages import API_BY_KEY

    def frame(count: int) -> bytes:
        tags = b"".join(uvarint_bytes(i) + b"\x00" for i in range(count))
        # Metadata v12 (flexible): header v2, then topics=null, auto-create, authorized-ops.
        header = (3).to_bytes(2, "big") + (12).to_bytes(2, "big") + (7).to_bytes(4, "big")
        header += b"\x00\x01c" + uvarint_bytes(count) + tags
        return header + b"\x00\x00\x00\x00"

    assert decode_request(frame(MAX_TAGGED_FIELDS), API_BY_KEY).header.correlation_id == 7
    with pytest.raises(ProtocolError, match="tagged fields exceed"):
        decode_request(frame(MAX_TAGGED_FIELDS + 1), API_BY_KEY)
