"""Framing, request headers, response framing and the ApiVersions fallback (protocol.wire), sans-I/O."""

from __future__ import annotations

import io
import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.request_header.v1.header import RequestHeader as KioHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as KioHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_unsigned_varint
from kio.serial.writers import write_unsigned_varint
from kio.static.primitive import uvarint

from kafkalite.protocol.wire import (
    LARGE_FRAME_BYTES,
    FrameBuffer,
    ProtocolError,
    RequestHeader,
    api_versions_fallback,
    decode_request_header,
    encode_unsigned_varint,
    frame_response,
    peek_request,
)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def read_into(frames: FrameBuffer, data: bytes) -> bool:
    """What a transport does: read `data` into the free space, as many reads as the space asks for."""
    complete = False
    while data:
        room = frames.writable()
        assert len(room) >= 1
        count = min(len(room), len(data))
        room[:count] = data[:count]
        complete = frames.advance(count)
        data = data[count:]
    return complete


def drain(frames: FrameBuffer) -> list[bytes]:
    taken = []
    while (frame := frames.next_frame()) is not None:
        if type(frame) is memoryview:  # a large frame that was at the front when its body began to arrive
            assert len(frame) >= LARGE_FRAME_BYTES
            assert frame.readonly
            frame = frame.tobytes()
        assert type(frame) is bytes
        taken.append(frame)
    return taken


@given(st.lists(st.binary(max_size=300), max_size=8))
def test_frames_read_one_byte_at_a_time(payloads: list[bytes]) -> None:
    frames = FrameBuffer()
    received: list[bytes] = []
    for byte in b"".join(framed(p) for p in payloads):
        complete = read_into(frames, bytes([byte]))
        taken = drain(frames)
        assert complete == bool(taken)  # `advance` says exactly when a frame is complete
        received += taken
    assert received == payloads
    assert frames.buffered == 0


@given(st.lists(st.binary(max_size=300), max_size=8), st.binary(min_size=1, max_size=3))
def test_frames_read_at_once_with_trailing_partial_bytes(payloads: list[bytes], trailing: bytes) -> None:
    frames = FrameBuffer()
    read_into(frames, b"".join(framed(p) for p in payloads) + trailing)
    assert drain(frames) == payloads
    assert frames.buffered == len(trailing)  # a partial size prefix stays buffered until the rest arrives


@given(
    st.lists(st.binary(max_size=3000), max_size=8),
    st.lists(st.integers(0, 30_000), max_size=12),
    st.sampled_from([16, 1024, 64 * 1024]),
)
def test_frames_read_in_any_pieces_into_any_initial_size(payloads: list[bytes], cuts: list[int], initial: int) -> None:
    assert_read_in_pieces(payloads, cuts, FrameBuffer(initial_bytes=initial))


def assert_read_in_pieces(payloads: list[bytes], cuts: list[int], frames: FrameBuffer) -> None:
    """The framed payloads, read in the pieces `cuts` makes, come out whole and in order, every byte accounted for."""
    stream = b"".join(framed(p) for p in payloads)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    received: list[bytes] = []
    for start, end in itertools.pairwise(bounds):
        read_into(frames, stream[start:end])
        received += drain(frames)
        assert frames.buffered == end - sum(4 + len(p) for p in received)
    assert received == payloads
    assert frames.buffered == 0


@pytest.mark.parametrize(
    ("first_body", "second_body"),
    [(20_000, 50_000), (40_000, 30_000)],
    ids=["unread-part-overlaps-its-new-place", "unread-part-clear-of-its-new-place"],
)
def test_unread_bytes_are_moved_to_the_front_intact(first_body: int, second_body: int) -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    first, second = b"a" * first_body, bytes(range(256)) * (second_body // 256) + b"z" * (second_body % 256)
    data = framed(first) + framed(second)
    read_into(frames, data[:60_004])  # the first frame and part of the second: 5,532 bytes of the buffer left free
    assert drain(frames) == [first]
    unread = 60_004 - (4 + first_body)
    room = frames.writable()  # too little free space for the rest of the second frame: the unread part moves
    assert frames.capacity == 64 * 1024  # moved in place, not into a new buffer
    assert len(room) == 64 * 1024 - unread
    assert frames.buffered == unread
    read_into(frames, data[60_004:])
    assert drain(frames) == [second]


def test_the_buffer_grows_for_a_frame_under_the_large_size_and_keeps_it() -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    medium = b"M" * (LARGE_FRAME_BYTES - 1)
    read_into(frames, framed(medium) + framed(b"next")[:2])
    assert frames.capacity >= len(medium) + 4
    assert drain(frames) == [medium]
    read_into(frames, framed(b"next")[2:])
    assert drain(frames) == [b"next"]
    frames.writable()
    assert frames.capacity >= len(medium) + 4  # kept for the next one
    assert frames.release()
    assert frames.capacity == 0


@pytest.mark.parametrize("frame_bytes", [LARGE_FRAME_BYTES, 1_000_000, 9_000_000], ids=["256-KiB", "1-MB", "9-MB"])
def test_a_large_frame_is_read_into_a_buffer_of_its_own_and_handed_out_uncopied(frame_bytes: int) -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    large = bytes(range(256)) * (frame_bytes // 256) + b"z" * (frame_bytes % 256)
    read_into(frames, framed(large) + framed(b"next") + framed(b"after")[:3])
    assert frames.capacity == 64 * 1024  # the receive buffer did not grow for it
    frame = frames.next_frame()
    assert type(frame) is memoryview
    assert frame.readonly
    assert frame == large
    assert frames.next_frame() == b"next"
    read_into(frames, framed(b"after")[3:])
    assert frames.next_frame() == b"after"
    assert frame == large  # the view stays intact after later frames


def test_a_large_frame_buffer_is_reused_only_once_no_view_of_it_is_left() -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    first, second, third = (bytes([n]) * 600_000 for n in (1, 2, 3))
    read_into(frames, framed(first))
    frame = frames.next_frame()
    assert isinstance(frame, memoryview)
    records = frame[100:200]  # what a request keeps: a slice of the frame
    del frame
    read_into(frames, framed(second))
    frame = frames.next_frame()
    assert isinstance(frame, memoryview)
    assert frame == second
    assert records == first[100:200]  # the first frame's buffer was not written over
    second_buffer = frame.obj
    del frame
    read_into(frames, framed(third))
    frame = frames.next_frame()
    assert isinstance(frame, memoryview)
    assert frame.obj is second_buffer  # no view of the second frame was left: its buffer was used again
    assert frame == third
    assert records == first[100:200]


def test_bytes_after_a_complete_large_frame_not_yet_taken_go_to_the_receive_buffer() -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    large = b"L" * 300_000
    assert read_into(frames, framed(large))
    for piece in (framed(b"one"), framed(b"two")):  # the transport reads again before the connection takes the frame
        room = frames.writable()
        assert len(room) > 0  # asyncio refuses an empty buffer
        read_into(frames, piece)
    assert frames.buffered == 4 + len(large) + 2 * 7
    assert drain(frames) == [large, b"one", b"two"]
    assert frames.buffered == 0


def test_release_gives_large_frame_buffers_back_but_not_under_a_frame_in_progress() -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    read_into(frames, framed(b"x" * 400_000)[:100_000])
    assert not frames.release()  # a large frame is in progress
    read_into(frames, framed(b"x" * 400_000)[100_000:])
    assert frames.next_frame() == b"x" * 400_000
    assert frames.release()
    assert not frames.release()


@given(
    st.lists(
        st.one_of(st.binary(max_size=300), st.integers(LARGE_FRAME_BYTES - 2, LARGE_FRAME_BYTES + 70_000)), max_size=6
    ),
    st.lists(st.integers(0, 2_000_000), max_size=12),
)
def test_small_and_large_frames_read_in_any_pieces(items: list[bytes | int], cuts: list[int]) -> None:
    payloads = [item if isinstance(item, bytes) else bytes([item % 251]) * item for item in items]
    assert_read_in_pieces(payloads, cuts, FrameBuffer(initial_bytes=64 * 1024))


def test_release_gives_the_memory_back_only_while_nothing_is_buffered() -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    read_into(frames, framed(b"one") + framed(b"two")[:3])
    assert frames.next_frame() == b"one"
    assert not frames.release()  # a partial frame is buffered: kept
    read_into(frames, framed(b"two")[3:])
    assert frames.next_frame() == b"two"
    assert frames.release()
    assert frames.capacity == 0
    assert not frames.release()
    read_into(frames, framed(b"three"))  # the next read allocates it again
    assert frames.capacity == 64 * 1024
    assert frames.next_frame() == b"three"


def test_the_space_offered_covers_the_rest_of_the_frame_in_progress() -> None:
    frames = FrameBuffer(initial_bytes=64 * 1024)
    assert not read_into(frames, struct.pack(">i", 500_000) + b"x" * 10)
    assert frames.next_frame() is None
    assert len(frames.writable()) >= 500_000 - 10  # one read can bring the whole body


def test_partial_body_waits() -> None:
    frames = FrameBuffer()
    assert not read_into(frames, framed(b"abcdef")[:7])
    assert frames.next_frame() is None
    assert read_into(frames, b"def")
    assert frames.next_frame() == b"abcdef"


@pytest.mark.parametrize("size", [-1, 1025, 2**31 - 1])
def test_size_outside_limit_is_refused_before_the_body_arrives(size: int) -> None:
    frames = FrameBuffer(max_frame_bytes=1024)
    assert read_into(frames, struct.pack(">i", size))  # complete enough to be refused at once
    with pytest.raises(ProtocolError, match="frame size"):
        frames.next_frame()
    assert frames.capacity == 64 * 1024  # nothing was allocated for the body


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    frames = FrameBuffer(max_frame_bytes=1024)
    read_into(frames, framed(b"x" * 1024))
    assert frames.next_frame() == b"x" * 1024


def _kio_header(cls: type, client_id: str | None) -> bytes:
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, cls(request_api_key=3, request_api_version=12, correlation_id=77, client_id=client_id))
    return buffer.getvalue()


def test_request_header_v0_has_no_client_id() -> None:
    frame = struct.pack(">hhi", 7, 0, 5) + b"body"
    header, offset = decode_request_header(frame, 0)
    assert header == RequestHeader(api_key=7, api_version=0, correlation_id=5, client_id=None)
    assert frame[offset:] == b"body"


@pytest.mark.parametrize(("version", "kio_cls"), [(1, KioHeaderV1), (2, KioHeaderV2)])
@pytest.mark.parametrize("client_id", [None, "", "rdkafka", "ünïcode"])
def test_request_header_v1_v2(version: int, kio_cls: type, client_id: str | None) -> None:
    frame = _kio_header(kio_cls, client_id) + b"body"
    header, offset = decode_request_header(frame, version)
    assert header == RequestHeader(api_key=3, api_version=12, correlation_id=77, client_id=client_id)
    assert frame[offset:] == b"body"


def test_request_header_v2_skips_tagged_fields() -> None:
    # client_id "c" then one tagged field (tag 5, 2 bytes) that we do not know
    frame = struct.pack(">hhih", 3, 12, 77, 1) + b"c" + b"\x01\x05\x02zz" + b"body"
    header, offset = decode_request_header(frame, 2)
    assert header.client_id == "c"
    assert frame[offset:] == b"body"


@pytest.mark.parametrize("frame", [b"", b"\x00\x03\x00", struct.pack(">hhih", 3, 12, 77, 50) + b"short"])
def test_truncated_request_header_is_a_protocol_error(frame: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_request_header(frame, 1)


@pytest.mark.parametrize("tagged", [b"\xff\xff\xff\xff\xff\x01", b"\x01\xff\xff\xff\xff\xff\x01"])
def test_overlong_varint_in_request_header_tagged_fields_is_a_protocol_error(tagged: bytes) -> None:
    frame = struct.pack(">hhih", 3, 12, 77, 1) + b"c" + tagged
    with pytest.raises(ProtocolError):
        decode_request_header(frame, 2)


def test_peek_request() -> None:
    assert peek_request(struct.pack(">hhi", 18, 4, -3)) == (18, 4, -3)


def test_response_framing_v0_and_v1() -> None:
    assert frame_response(9, 0, b"xy") == struct.pack(">ii", 6, 9) + b"xy"
    assert frame_response(9, 1, b"xy") == struct.pack(">ii", 7, 9) + b"\x00xy"


def test_api_versions_fallback_is_a_v0_body_with_unsupported_version() -> None:
    frame = api_versions_fallback(42, [(0, 3, 13), (18, 0, 4)])
    (size, correlation_id) = struct.unpack_from(">ii", frame)
    assert size == len(frame) - 4
    assert correlation_id == 42
    body, consumed = entity_reader(ApiVersionsResponse)(frame[8:], 0)
    assert consumed == len(frame) - 8
    assert body.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(0, 3, 13), (18, 0, 4)]


@pytest.mark.parametrize(
    ("value", "encoded"), [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02")]
)
def test_unsigned_varint_as_kafka_writes_it(value: int, encoded: bytes) -> None:
    assert encode_unsigned_varint(value) == encoded
    assert read_unsigned_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_is_what_kio_writes(value: int) -> None:
    buffer = io.BytesIO()
    write_unsigned_varint(buffer, uvarint(value))
    assert encode_unsigned_varint(value) == buffer.getvalue()


@pytest.mark.parametrize("value", [-1, 2**32])
def test_a_value_outside_an_unsigned_varint_is_refused(value: int) -> None:
    with pytest.raises(ValueError, match="unsigned varint"):
        encode_unsigned_varint(value)
