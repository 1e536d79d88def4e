"""Size-prefixed frames of the Kafka protocol, sans-IO (h11 style).

Contract:
- Bytes go in with :meth:`FrameDecoder.receive_data` in chunks of any size; whole frames come
  out of :meth:`FrameDecoder.next_frame` in order, without their 4-byte big-endian size prefix,
  as a *writable* memoryview over a buffer that the decoder never touches again: handlers may
  keep it and zero-copy slices of it for as long as they like, and may patch it in place (the
  broker assigns offsets and leader epochs inside received record batches without copying).
  ``None`` means more data is needed.
- A size prefix that is negative or larger than ``max_frame_bytes`` raises
  :class:`ProtocolError` (Kafka's ``InvalidReceiveException``); the decoder is then unusable
  and the connection must be closed.
- Cost: every byte is copied once into the frame it belongs to, however it is split. A large
  frame gets a buffer of its exact size as soon as its prefix is known; small frames are cut
  from a shared buffer that is compacted only after its consumed part dominates it, so many
  small frames cost O(total bytes).
"""

from __future__ import annotations

from typing import Final

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.types import INT32, BytesLike

# Kafka's socket.request.max.bytes default.
DEFAULT_MAX_FRAME_BYTES: Final = 104857600

# Frames at least this large are assembled in a dedicated buffer instead of the shared one.
_LARGE_FRAME_BYTES: Final = 64 * 1024
_COMPACT_AFTER_BYTES: Final = 64 * 1024


class FrameDecoder:
    """Splits a byte stream into Kafka frames."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._pos = 0  # start of unconsumed bytes in _buffer
        self._large: bytearray | None = None  # the large frame being filled, if any
        self._large_filled = 0
        self._failed: ProtocolError | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as frames (back-pressure accounting)."""
        pending = len(self._buffer) - self._pos
        if self._large is not None:
            pending += self._large_filled
        return pending

    def receive_data(self, data: BytesLike) -> None:
        if self._large is not None:
            view = memoryview(data)
            if view.format != "B" or view.ndim != 1:
                view = view.cast("B")
            wanted = len(self._large) - self._large_filled
            take = min(wanted, len(view))
            self._large[self._large_filled : self._large_filled + take] = view[:take]
            self._large_filled += take
            if take < len(view):
                self._buffer += view[take:]
            return
        self._buffer += data

    def next_frame(self) -> memoryview | None:
        """The next whole frame, or ``None`` if more data is needed."""
        if self._failed is not None:
            raise self._failed
        large = self._large
        if large is not None:
            if self._large_filled < len(large):
                return None
            self._large = None
            self._large_filled = 0
            return memoryview(large)
        buffer = self._buffer
        pos = self._pos
        available = len(buffer) - pos
        if available < 4:
            return None
        size = int(INT32.unpack_from(buffer, pos)[0])
        if size < 0 or size > self.max_frame_bytes:
            self._failed = ProtocolError(
                f"invalid frame size {size} (max {self.max_frame_bytes} bytes)"
            )
            raise self._failed
        start = pos + 4
        if available - 4 >= size:
            frame = buffer[start : start + size]  # a new bytearray: writable, unshared
            self._consume(start + size)
            return memoryview(frame)
        if size >= _LARGE_FRAME_BYTES:
            # Move the partial frame into a buffer of its final size; later bytes go straight
            # there, so a many-megabyte frame is never re-copied as it grows.
            large = bytearray(size)
            have = available - 4
            large[:have] = buffer[start:]
            self._large = large
            self._large_filled = have
            self._buffer = bytearray()
            self._pos = 0
        return None

    def _consume(self, new_pos: int) -> None:
        buffer = self._buffer
        if new_pos == len(buffer):
            buffer.clear()
            self._pos = 0
        elif new_pos >= _COMPACT_AFTER_BYTES and new_pos * 2 >= len(buffer):
            del buffer[:new_pos]
            self._pos = 0
        else:
            self._pos = new_pos


def frame_size_prefix(size: int) -> bytes:
    """The 4-byte prefix of a frame of ``size`` bytes."""
    return INT32.pack(size)
