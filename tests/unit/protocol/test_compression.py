"""Tests for sparklog.protocol.compression: round trips, producer variants, bounds, fuzz."""

from __future__ import annotations

import contextlib
import gzip
import struct
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.protocol import compression as c

CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]
COMPRESSED = [c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]

payloads = st.one_of(
    st.binary(max_size=4096),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=64), st.integers(1, 2000)),
)


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=60, deadline=None)
@given(data=payloads)
def test_round_trip(codec: int, data: bytes) -> None:
    assert c.decompress(codec, c.compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_accepts_memoryview_and_bytearray(codec: int) -> None:
    data = b"sparklog " * 500
    packed = c.compress(codec, bytearray(data))
    assert c.decompress(codec, memoryview(bytearray(packed))) == data


@pytest.mark.parametrize("codec", [c.GZIP, c.LZ4, c.ZSTD])
def test_concatenated_frames(codec: int) -> None:
    first, second = b"a" * 3000, b"b" * 5000
    joined = c.compress(codec, first) + c.compress(codec, second)
    assert c.decompress(codec, joined) == first + second


def test_gzip_from_stdlib_gzip_with_mtime() -> None:
    data = b"hello gzip " * 100
    assert c.decompress(c.GZIP, gzip.compress(data, mtime=1_700_000_000)) == data


def test_gzip_output_is_deterministic_and_real_gzip() -> None:
    data = b"same in, same out" * 10
    assert c.compress(c.GZIP, data) == c.compress(c.GZIP, data)
    assert gzip.decompress(c.compress(c.GZIP, data)) == data


def test_gzip_zlib_stream_is_rejected() -> None:
    with pytest.raises(c.CompressionError):
        c.decompress(c.GZIP, zlib.compress(b"not gzip framing"))


def _xerial(blocks: list[bytes], version: int = 1, compat: int = 1) -> bytes:
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", version, compat))
    for block in blocks:
        raw = bytes(cramjam.snappy.compress_raw(block))
        out += struct.pack(">i", len(raw)) + raw
    return bytes(out)


def test_snappy_xerial_framing_built_by_hand() -> None:
    blocks = [b"x" * 32768, b"second block " * 100, b"", b"tail"]
    assert c.decompress(c.SNAPPY, _xerial(blocks)) == b"".join(blocks)


def test_snappy_xerial_header_only_is_empty() -> None:
    assert c.decompress(c.SNAPPY, _xerial([])) == b""


@pytest.mark.parametrize("cut", [9, 15, 17, 19, 25, -1])
def test_snappy_xerial_truncated(cut: int) -> None:
    framed = _xerial([b"abc" * 1000, b"def" * 1000])
    with pytest.raises(c.CompressionError):
        c.decompress(c.SNAPPY, framed[:cut])


def test_snappy_xerial_negative_block_length() -> None:
    framed = b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, -5)
    with pytest.raises(c.CompressionError, match="truncated"):
        c.decompress(c.SNAPPY, framed)


def test_snappy_compress_writes_raw_snappy() -> None:
    data = b"raw please" * 50
    assert bytes(cramjam.snappy.decompress_raw(c.compress(c.SNAPPY, data))) == data


@pytest.mark.parametrize("content_size", [False, True])
@pytest.mark.parametrize("block_linked", [False, True])
def test_lz4_frames_from_python_lz4(content_size: bool, block_linked: bool) -> None:
    data = bytes(range(256)) * 1000
    framed = lz4.frame.compress(
        data, store_size=content_size, block_linked=block_linked, content_checksum=True
    )
    assert c.decompress(c.LZ4, framed) == data


@pytest.mark.parametrize("with_size", [False, True])
def test_zstd_frames_with_and_without_content_size(with_size: bool) -> None:
    data = b"zstd content " * 20000
    cctx = zstandard.ZstdCompressor(write_content_size=with_size)
    if with_size:
        framed = cctx.compress(data)
    else:
        writer = cctx.compressobj()
        framed = writer.compress(data) + writer.flush()
    assert (zstandard.frame_content_size(framed) == len(data)) == with_size
    assert c.decompress(c.ZSTD, framed) == data


@pytest.mark.parametrize("codec", CODECS)
def test_output_bound(codec: int) -> None:
    data = bytes(200_000)
    packed = c.compress(codec, data)
    assert c.decompress(codec, packed, max_size=len(data)) == data
    with pytest.raises(c.DecompressedTooLargeError) as info:
        c.decompress(codec, packed, max_size=len(data) - 1)
    assert info.value.error_code == c.CORRUPT_MESSAGE
    assert "exceeds the limit" in str(info.value)


def test_output_bound_xerial_counts_all_blocks() -> None:
    framed = _xerial([bytes(1000), bytes(1000)])
    assert len(c.decompress(c.SNAPPY, framed, max_size=2000)) == 2000
    with pytest.raises(c.DecompressedTooLargeError):
        c.decompress(c.SNAPPY, framed, max_size=1999)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_zip_bomb_is_refused_by_default(codec: int) -> None:
    bomb = c.compress(codec, bytes(c.DEFAULT_MAX_DECOMPRESSED_BYTES + 1))
    assert len(bomb) < c.DEFAULT_MAX_DECOMPRESSED_BYTES // 20
    with pytest.raises(c.DecompressedTooLargeError):
        c.decompress(codec, bomb)


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 100])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(c.UnsupportedCodecError) as info:
        c.decompress(codec, b"data")
    assert info.value.error_code == c.UNSUPPORTED_COMPRESSION_TYPE
    assert int(info.value.error_code) == 76
    assert str(codec) in str(info.value)
    with pytest.raises(c.UnsupportedCodecError):
        c.compress(codec, b"data")


@pytest.mark.parametrize("codec", COMPRESSED)
def test_every_truncation_is_an_error(codec: int) -> None:
    data = bytes(range(256)) * 40 + b"tail"
    packed = c.compress(codec, data)
    step = max(1, len(packed) // 300)
    for cut in [*range(0, len(packed), step), len(packed) - 1]:
        with pytest.raises(c.CompressionError):
            c.decompress(codec, packed[:cut])


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=150, deadline=None)
@given(garbage=st.binary(max_size=300))
def test_garbage_only_raises_compression_error(codec: int, garbage: bytes) -> None:
    with contextlib.suppress(c.CompressionError):
        c.decompress(codec, garbage, max_size=1 << 20)


@pytest.mark.parametrize("codec", COMPRESSED)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_mutated_stream_only_raises_compression_error(codec: int, data: st.DataObject) -> None:
    packed = bytearray(c.compress(codec, b"mutate me " * 300))
    index = data.draw(st.integers(0, len(packed) - 1))
    packed[index] ^= data.draw(st.integers(1, 255))
    with contextlib.suppress(c.CompressionError):
        c.decompress(codec, bytes(packed), max_size=1 << 20)


def test_codec_names() -> None:
    assert [c.codec_name(i) for i in CODECS] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert c.codec_name(9) == "unknown(9)"


def test_zstd_decompress_into_writes_one_sized_frame_in_place() -> None:
    data = b"sparklog " * 500
    frame = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(data)
    out = bytearray(len(data) + 8)
    assert c.zstd_content_size(frame) == len(data)
    assert c.zstd_decompress_into(frame, memoryview(out)[4:]) == len(data)
    assert bytes(out[4 : 4 + len(data)]) == data


@pytest.mark.parametrize("case", ["no size", "two frames", "garbage after", "truncated", "small"])
def test_zstd_decompress_into_declines_what_decompress_must_handle(case: str) -> None:
    data = b"sparklog " * 500
    sized = zstandard.ZstdCompressor(level=1, write_content_size=True)
    frame = sized.compress(data)
    payload = {
        "no size": zstandard.ZstdCompressor(write_content_size=False).compress(data),
        "two frames": frame + sized.compress(b"more"),
        "garbage after": frame + b"\x00junk",
        "truncated": frame[:-3],
        "small": frame,
    }[case]
    room = len(data) if case == "small" else len(data) + 64
    assert c.zstd_decompress_into(payload, memoryview(bytearray(room))) == -1
