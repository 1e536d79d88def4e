"""Record-batch compression codecs: gzip, snappy, lz4 and zstd, as Kafka puts them on the wire.

Contract:

- ``compress(codec, data)`` returns the bytes a Kafka client would put after a v2 batch's
  record count when the batch's attributes name ``codec``; ``decompress`` inverts it and also
  accepts what real producers send: gzip with several members, snappy either raw (librdkafka,
  kafka-python without xerial) or in the xerial block framing the Java client writes
  (magic ``b"\\x82SNAPPY\\x00"``, two int32 versions, then ``int32 length + raw block``s),
  lz4 frames (one or more), zstd frames with or without a content size (one or more).
- Decompression is bounded: output larger than ``max_size`` raises ``DecompressedTooLargeError``
  without materialising more than a bounded overshoot, so a zip bomb in a produce request or a
  corrupt segment cannot exhaust memory.
- Every failure is a ``CompressionError`` (never a codec library's own exception type) with
  the Kafka error code a client should see; an unknown codec id is
  ``UnsupportedCodecError`` (UNSUPPORTED_COMPRESSION_TYPE).

Plain functions on bytes; no I/O.
"""

from __future__ import annotations

import contextlib
import struct
import threading
import zlib
from typing import Final

import cramjam
import zstandard

from sparklog.protocol.errors import ErrorCode, KafkaApiError

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4

CODEC_NAMES: Final[dict[int, str]] = {
    NONE: "none",
    GZIP: "gzip",
    SNAPPY: "snappy",
    LZ4: "lz4",
    ZSTD: "zstd",
}

CORRUPT_MESSAGE: Final = ErrorCode.CORRUPT_MESSAGE
UNSUPPORTED_COMPRESSION_TYPE: Final = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE

# Far above Kafka's default message.max.bytes (1 MiB) and fetch sizes, far below what hurts.
DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 256 * 1024 * 1024

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE: Final = 16
_INT32: Final = struct.Struct(">i")
_XERIAL_HEADER: Final = struct.Struct(">8sii")

# zstd can turn 4 input bytes into a 128 KiB RLE block, so feeding at most this much input
# per call bounds the overshoot past max_size to about 32 MiB.
_ZSTD_INPUT_SLICE: Final = 1024
_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS
_ZSTD_LEVEL: Final = 3
_THREAD: Final = threading.local()


class CompressionError(KafkaApiError):
    """Compressed data cannot be turned back into records; ``error_code`` (= ``code``) is the
    Kafka error a client should see."""

    def __init__(self, message: str, error_code: ErrorCode = ErrorCode.CORRUPT_MESSAGE) -> None:
        super().__init__(error_code, message)
        self.error_code = error_code


class UnsupportedCodecError(CompressionError):
    """The attributes name a compression id Kafka does not define."""

    def __init__(self, codec: int) -> None:
        super().__init__(
            f"Unknown compression type id: {codec}", error_code=UNSUPPORTED_COMPRESSION_TYPE
        )
        self.codec = codec


class DecompressedTooLargeError(CompressionError):
    """Decompressing would produce more than the caller's ``max_size`` bytes."""

    def __init__(self, codec: int, max_size: int) -> None:
        super().__init__(
            f"Decompressed {codec_name(codec)} data exceeds the limit of {max_size} bytes"
        )
        self.max_size = max_size


def codec_name(codec: int) -> str:
    """Kafka's name for a compression id (``"zstd"``), or ``"unknown(<id>)"``."""
    return CODEC_NAMES.get(codec, f"unknown({codec})")


def compress(codec: int, data: bytes | bytearray | memoryview, level: int | None = None) -> bytes:
    """Compress ``data`` the way Kafka producers do for ``codec``; ``level`` None = default."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        # zlib with gzip wbits writes mtime 0, so equal input gives equal output (gzip.compress
        # would stamp the wall clock into the header).
        compressor = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, _GZIP_WBITS)
        return compressor.compress(data) + compressor.flush()
    if codec == SNAPPY:
        # Raw snappy, as librdkafka writes it; the Java consumer's xerial reader accepts it.
        return bytes(cramjam.snappy.compress_raw(bytes(data)))
    if codec == LZ4:
        if level is None:
            return bytes(cramjam.lz4.compress(bytes(data)))
        return bytes(cramjam.lz4.compress(bytes(data), level=level))
    if codec == ZSTD:
        # compressobj leaves the content size out of the frame, like the Java and C clients'
        # streaming encoders; decoders must cope with that anyway.
        cctx = zstandard.ZstdCompressor(level=_ZSTD_LEVEL if level is None else level)
        return cctx.compress(bytes(data))
    raise UnsupportedCodecError(codec)


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """Inverse of ``compress`` (plus the producer variants listed in the module docstring)."""
    if codec == NONE:
        if len(data) > max_size:
            raise DecompressedTooLargeError(codec, max_size)
        return bytes(data)
    if codec == GZIP:
        return _gunzip(data, max_size)
    if codec == SNAPPY:
        return _unsnappy(data, max_size)
    if codec == LZ4:
        return _unlz4(data, max_size)
    if codec == ZSTD:
        return _unzstd(data, max_size)
    raise UnsupportedCodecError(codec)


def _gunzip(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    out = bytearray()
    pending = bytes(data)
    if not pending:
        raise CompressionError("gzip data is empty")
    # Java's GZIPInputStream reads concatenated members, so a producer may send several.
    while pending:
        inflater = zlib.decompressobj(_GZIP_WBITS)
        try:
            while True:
                out += inflater.decompress(pending, max_size - len(out) + 1)
                if len(out) > max_size:
                    raise DecompressedTooLargeError(GZIP, max_size)
                pending = inflater.unconsumed_tail
                if inflater.eof or not pending:
                    break
        except zlib.error as exc:
            raise CompressionError(f"gzip data is corrupt: {exc}") from exc
        if not inflater.eof:
            raise CompressionError("gzip data is truncated")
        pending = inflater.unused_data
    return bytes(out)


def _unsnappy(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    raw = bytes(data)
    if raw[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return _unsnappy_block(raw, max_size)
    if len(raw) < _XERIAL_HEADER_SIZE:
        raise CompressionError("xerial snappy header is truncated")
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise CompressionError("xerial snappy block length is truncated")
        (block_len,) = _INT32.unpack_from(raw, pos)
        pos += 4
        if block_len < 0 or pos + block_len > len(raw):
            raise CompressionError(f"xerial snappy block of {block_len} bytes is truncated")
        out += _unsnappy_block(raw[pos : pos + block_len], max_size - len(out))
        pos += block_len
    return bytes(out)


def _unsnappy_block(block: bytes, max_size: int) -> bytes:
    try:
        # The raw format states its length up front, so the bound is checked before allocating.
        if cramjam.snappy.decompress_raw_len(block) > max_size:
            raise DecompressedTooLargeError(SNAPPY, max_size)
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise CompressionError(f"snappy data is corrupt: {exc}") from exc


def _unlz4(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    raw = bytes(data)
    # cramjam has no bounded streaming lz4 decoder; decompress_into fails when the output does
    # not fit, so grow the buffer geometrically (total work stays within ~2x one pass).
    capacity = min(max_size + 1, max(64 * 1024, 4 * len(raw)))
    while True:
        out = bytearray(capacity)
        try:
            written = int(cramjam.lz4.decompress_into(raw, out))
        except cramjam.DecompressionError as exc:
            if "failed to write whole buffer" not in str(exc):
                raise CompressionError(f"lz4 data is corrupt: {exc}") from exc
            if capacity > max_size:
                raise DecompressedTooLargeError(LZ4, max_size) from exc
            capacity = min(max_size + 1, capacity * 4)
            continue
        if written > max_size:
            raise DecompressedTooLargeError(LZ4, max_size)
        del out[written:]
        return bytes(out)


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor: making one costs more than decoding a small batch, and a
    decompressor must not be shared between threads."""
    dctx: zstandard.ZstdDecompressor | None = getattr(_THREAD, "zstd_decompressor", None)
    if dctx is None:
        dctx = _THREAD.zstd_decompressor = zstandard.ZstdDecompressor()
    return dctx


def zstd_content_size(data: bytes | bytearray | memoryview) -> int:
    """The content size a zstd frame's header states, or -1 (none stated, or not zstd)."""
    try:
        return int(zstandard.frame_content_size(data))
    except zstandard.ZstdError:
        return -1


def zstd_decompress_into(data: bytes | bytearray | memoryview, out: memoryview) -> int:
    """Decompress ``data`` straight into ``out`` (no intermediate bytes object) when it is
    one zstd frame stating a content size below ``len(out)`` (one spare byte shows that
    nothing follows); returns that size, or -1 when ``data`` is anything else (several frames,
    no size, corrupt, truncated), which :func:`decompress` then handles or reports. Bytes of
    ``out`` may have been written either way."""
    size = zstd_content_size(data)
    if size < 0 or size >= len(out):
        return -1
    try:
        with _zstd_decompressor().stream_reader(data, read_across_frames=True) as reader:
            written = reader.readinto(out[: size + 1])
    except zstandard.ZstdError:
        return -1
    return size if written == size else -1


def _unzstd(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    view = memoryview(data).cast("B")
    if not view:
        raise CompressionError("zstd data is empty")
    dctx = _zstd_decompressor()
    # One frame that states its content size (what this module and librdkafka write) is
    # bounded up front and decoded in one call; anything else takes the sliced loop below.
    try:
        content_size = zstandard.frame_content_size(view)
    except zstandard.ZstdError:
        content_size = -1
    if 0 <= content_size <= max_size:
        with contextlib.suppress(zstandard.ZstdError):
            return dctx.decompress(view, allow_extra_data=False)
    chunks: list[bytes] = []
    total = 0
    pos = 0
    decoder = dctx.decompressobj()
    mid_frame = False
    try:
        while pos < len(view):
            piece = view[pos : pos + _ZSTD_INPUT_SLICE]
            pos += len(piece)
            mid_frame = True
            chunk = decoder.decompress(piece)
            if decoder.eof:
                # The frame ended inside this slice: give the rest back, start the next frame.
                pos -= len(decoder.unused_data)
                decoder = dctx.decompressobj()
                mid_frame = False
            total += len(chunk)
            if total > max_size:
                raise DecompressedTooLargeError(ZSTD, max_size)
            chunks.append(chunk)
    except zstandard.ZstdError as exc:
        raise CompressionError(f"zstd data is corrupt: {exc}") from exc
    if mid_frame:
        raise CompressionError("zstd data is truncated")
    return b"".join(chunks)
