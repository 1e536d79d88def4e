"""Primitive readers and writers: varints, lengths, and errors that must be ProtocolErrors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.types import (
    PASSTHROUGH_BYTES,
    Reader,
    Writer,
    join_chunks,
    uvarint_bytes,
    uvarint_size,
    varint_bytes,
    varlong_bytes,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-2, b"\x03"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_zigzag_varint_golden(value: int, encoded: bytes) -> None:
    assert varint_bytes(value) == encoded
    assert Reader(encoded).varint() == value


def test_uvarint_golden() -> None:
    assert uvarint_bytes(0) == b"\x00"
    assert uvarint_bytes(127) == b"\x7f"
    assert uvarint_bytes(128) == b"\x80\x01"
    assert uvarint_bytes(300) == b"\xac\x02"
    assert uvarint_bytes(2**32 - 1) == b"\xff\xff\xff\xff\x0f"
    assert Reader(b"\xac\x02").uvarint() == 300


@settings(max_examples=200)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_roundtrip(value: int) -> None:
    encoded = varlong_bytes(value)
    reader = Reader(encoded + b"\x99")
    assert reader.varlong() == value
    assert reader.pos == len(encoded)


@settings(max_examples=200)
@given(st.integers(0, 2**32 - 1))
def test_uvarint_roundtrip(value: int) -> None:
    encoded = uvarint_bytes(value)
    assert len(encoded) == uvarint_size(value)
    writer = Writer()
    writer.uvarint(value)
    assert writer.getvalue() == encoded
    assert Reader(encoded).uvarint() == value


def test_varint_range_is_checked_on_write() -> None:
    with pytest.raises(ValueError):
        varint_bytes(2**31)
    with pytest.raises(ValueError):
        uvarint_bytes(-1)


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x80\x80\x80\x80\x01",  # six bytes: too long for an int varint
        b"\x80\x80",  # truncated
        b"",
    ],
)
def test_bad_uvarint(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        Reader(data).uvarint()


def test_varlong_at_most_ten_bytes() -> None:
    assert Reader(b"\xff" * 9 + b"\x01").uvarlong() == 2**64 - 1
    with pytest.raises(ProtocolError):
        Reader(b"\xff" * 10 + b"\x01").uvarlong()


@pytest.mark.parametrize(
    ("method", "data"),
    [
        ("int8", b""),
        ("int16", b"\x00"),
        ("int32", b"\x00\x00\x00"),
        ("int64", b"\x00" * 7),
        ("uuid", b"\x00" * 15),
        ("float64", b"\x00" * 7),
        ("string", b"\x00\x05abcd"),
        ("string", b"\xff\xff"),  # null where not nullable
        ("string", b"\xff\xfe"),  # -2
        ("nullable_string", b"\xff\xfe"),
        ("compact_string", b"\x00"),  # null where not nullable
        ("compact_string", b"\x03a"),
        ("compact_string", b"\x02\xff"),  # invalid UTF-8
        ("byte_string", b"\xff\xff\xff\xff"),
        ("nullable_byte_string", b"\x80\x00\x00\x00"),
        ("compact_byte_string", b"\x05abc"),
        ("array_length", b"\x00\x00\x00\x05\x00"),
    ],
)
def test_reader_errors_are_protocol_errors(method: str, data: bytes) -> None:
    with pytest.raises(ProtocolError):
        getattr(Reader(data), method)()


def test_nullable_values() -> None:
    assert Reader(b"\xff\xff").nullable_string() is None
    assert Reader(b"\x00").compact_nullable_string() is None
    assert Reader(b"\xff\xff\xff\xff").nullable_byte_string() is None
    assert Reader(b"\x00").compact_nullable_byte_string() is None
    assert Reader(b"\xff\xff\xff\xff").array_length(nullable=True) is None
    assert Reader(b"\x00").compact_array_length(nullable=True) is None
    assert Reader(b"\xff\xff\xff\xff").records(compact=False) is None


def test_reader_window_is_respected() -> None:
    reader = Reader(b"\x00\x00\x00\x01\x00\x00\x00\x02", pos=0, end=6)
    assert reader.int32() == 1
    with pytest.raises(ProtocolError):
        reader.int32()


def test_reader_accepts_non_byte_memoryviews() -> None:
    view = memoryview(b"\x80\x01").cast("c")
    assert Reader(view).uvarint() == 128  # type: ignore[arg-type]


@settings(max_examples=100)
@given(st.text(max_size=40), st.binary(max_size=40))
def test_strings_and_bytes_roundtrip(text: str, blob: bytes) -> None:
    writer = Writer()
    writer.string(text)
    writer.compact_string(text)
    writer.nullable_string(None)
    writer.byte_string(blob)
    writer.compact_byte_string(blob)
    writer.compact_nullable_byte_string(None)
    reader = Reader(writer.getvalue())
    assert reader.string() == text
    assert reader.compact_string() == text
    assert reader.nullable_string() is None
    assert reader.byte_string() == blob
    assert reader.compact_byte_string() == blob
    assert reader.compact_nullable_byte_string() is None
    assert reader.remaining == 0


def test_writer_passes_large_data_through() -> None:
    big = memoryview(b"y" * PASSTHROUGH_BYTES)
    writer = Writer()
    writer.int32(7)
    writer.raw(big)
    writer.int8(1)
    chunks = writer.chunks()
    assert chunks[1] is big
    assert join_chunks(chunks) == b"\x00\x00\x00\x07" + bytes(big) + b"\x01"


def test_writer_rejects_bad_values() -> None:
    writer = Writer()
    with pytest.raises(ValueError):
        writer.uuid(b"\x00" * 15)
    with pytest.raises(ValueError):
        writer.boolean(None)  # type: ignore[arg-type]
