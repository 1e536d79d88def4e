"""FrameDecoder: whole, one byte at a time and random chunks give the same frames; bad sizes
are protocol errors; large frames are assembled correctly."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparklog.protocol.errors import ProtocolError
from sparklog.protocol.framing import FrameDecoder, frame_size_prefix


def _stream(frames: list[bytes]) -> bytes:
    return b"".join(frame_size_prefix(len(f)) + f for f in frames)


def _drain(decoder: FrameDecoder) -> list[bytes]:
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(bytes(frame))
    return out


def _feed(chunks: Sequence[bytes | memoryview], max_frame_bytes: int = 1 << 24) -> list[bytes]:
    decoder = FrameDecoder(max_frame_bytes)
    out: list[bytes] = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        out.extend(_drain(decoder))
    assert decoder.buffered_bytes == 0
    return out


frames_strategy = st.lists(
    st.binary(max_size=40) | st.integers(60_000, 200_000).map(lambda n: bytes([n % 251]) * n),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(frames=frames_strategy, data=st.data())
def test_whole_and_random_chunks_agree(frames: list[bytes], data: st.DataObject) -> None:
    stream = _stream(frames)
    assert _feed([stream]) == frames
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert _feed(chunks) == frames
    assert _feed([memoryview(c) for c in chunks]) == frames


@settings(max_examples=30, deadline=None)
@given(frames=st.lists(st.binary(max_size=20), max_size=8))
def test_one_byte_at_a_time(frames: list[bytes]) -> None:
    stream = _stream(frames)
    assert _feed([stream[i : i + 1] for i in range(len(stream))]) == frames


def test_large_frame_one_byte_at_a_time_then_small_ones() -> None:
    big = bytes(range(256)) * 400  # 102400 bytes: a dedicated buffer
    stream = _stream([big, b"a", b"", b"bc"])
    decoder = FrameDecoder()
    out: list[bytes] = []
    step = 997
    for i in range(0, len(stream), step):
        decoder.receive_data(stream[i : i + step])
        out.extend(_drain(decoder))
    assert out == [big, b"a", b"", b"bc"]


def test_frames_stay_valid_after_more_data() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(_stream([b"first"]))
    first = decoder.next_frame()
    assert first is not None
    decoder.receive_data(_stream([b"second" * 50_000]))
    decoder.receive_data(_stream([b"third"]))
    assert _drain(decoder) == [b"second" * 50_000, b"third"]
    assert bytes(first) == b"first"


def test_need_more_data() -> None:
    decoder = FrameDecoder()
    assert decoder.next_frame() is None
    decoder.receive_data(b"\x00\x00")
    assert decoder.next_frame() is None
    decoder.receive_data(b"\x00\x03ab")
    assert decoder.next_frame() is None
    assert decoder.buffered_bytes == 6
    decoder.receive_data(b"c")
    frame = decoder.next_frame()
    assert frame is not None and bytes(frame) == b"abc"


@pytest.mark.parametrize("prefix", [b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x04\x01"])
def test_bad_sizes_are_protocol_errors(prefix: bytes) -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    decoder.receive_data(prefix)
    with pytest.raises(ProtocolError):
        decoder.next_frame()
    with pytest.raises(ProtocolError):  # the decoder stays failed
        decoder.next_frame()


def test_max_size_is_inclusive() -> None:
    decoder = FrameDecoder(max_frame_bytes=4)
    decoder.receive_data(_stream([b"abcd"]))
    frame = decoder.next_frame()
    assert frame is not None and bytes(frame) == b"abcd"


def test_default_limit_is_kafkas_socket_request_max_bytes() -> None:
    decoder = FrameDecoder()
    assert decoder.max_frame_bytes == 104857600
    decoder.receive_data(frame_size_prefix(104857601))
    with pytest.raises(ProtocolError):
        decoder.next_frame()


def test_many_small_frames_scale_linearly() -> None:
    # 200k frames in chunks of 64 KiB; quadratic buffer handling would take minutes.
    frames = [b"x" * (i % 17) for i in range(200_000)]
    stream = _stream(frames)
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    assert _feed(chunks) == frames


def test_frames_are_writable_and_independent() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(_stream([b"abc", b"def", b"z" * 100_000]))
    first, second, big = decoder.next_frame(), decoder.next_frame(), decoder.next_frame()
    assert first is not None and second is not None and big is not None
    assert not first.readonly and not big.readonly
    first[0] = ord("X")
    big[0] = ord("Y")
    assert bytes(first) == b"Xbc" and bytes(second) == b"def"
    assert bytes(big[:2]) == b"Yz"
