"""Kafka wire framing and request/response headers, sans-I/O.

Frame = 4-byte big-endian signed size N, then N bytes. A request frame is a request header followed by the body; a
response frame is a response header followed by the body. The header version follows from the API key and version:

    request header v0  api_key int16, api_version int16, correlation_id int32       (ControlledShutdown v0 only)
    request header v1  v0 + client_id nullable int16-length string                   (every non-flexible request)
    request header v2  v1 + tagged fields; client_id stays a non-compact string       (every flexible request)
    response header v0 correlation_id int32                                          (non-flexible, and ApiVersions)
    response header v1 v0 + tagged fields                                            (flexible, except ApiVersions)

`FrameBuffer` is a connection's receive buffer: the transport reads into it, and it splits what was read into frames,
copying each frame once, except a large one, which is read into a buffer of its own and handed out as a read-only
view with no copy; it grows only to hold the frame in progress. A size over the configured maximum (Kafka's
`socket.request.max.bytes`) or below zero is a `ProtocolError` as soon as its 4-byte prefix arrives, before the
buffer grows for the body.

An ApiVersions request at a version we do not serve is answered with a v0 body carrying UNSUPPORTED_VERSION (35) and
our ranges (KIP-511): clients retry at a version we do list. `api_versions_fallback` builds that frame.

Nothing here touches sockets, files or an event loop.
"""

from __future__ import annotations

import enum
import io
import struct
from collections.abc import Iterable
from typing import Final, NamedTuple

from kio.schema.api_versions.v0.response import ApiVersion, ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial.errors import SerialError
from kio.serial.readers import read_nullable_legacy_string, read_unsigned_varint
from kio.static.primitive import i16

from kafkalite.errors import ProtocolError

DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024  # socket.request.max.bytes
UNSUPPORTED_VERSION: Final = 35

_SIZE = struct.Struct(">i")
_STRING_LENGTH = struct.Struct(">h")
_MIN_READ_ROOM: Final = 16 * 1024  # the smallest free space a read is offered: fewer, larger reads
_KEEP_BYTES: Final = 8 * 1024 * 1024  # a receive buffer grown up to this size is kept for the next large frame
LARGE_FRAME_BYTES: Final = 256 * 1024
"""A frame whose body is at least this long is read into a buffer of its own and handed out as a view."""
# Large-frame buffers kept per connection for reuse: room for what the server lets the requests of pending answers keep
# (its MAX_PENDING_BYTES, 32 MiB) in buffers an eighth larger than their frames, plus the frame being read, so a
# producer pipelining acks=all requests up to that bound allocates none once warm. A frame over a quarter of it gets
# a buffer that is not kept.
_SPARE_BYTES: Final = 40 * 1024 * 1024
_API = struct.Struct(">hhi")  # api_key, api_version, correlation_id: the first 8 bytes of every request header
_API_SIZE: Final = 8


class ApiKey(enum.IntEnum):
    """The Kafka API keys KafkaLite knows by name."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_QUORUM = 55
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75


class FrameBuffer:
    """A connection's receive buffer that splits it into size-prefixed frames.

    The transport reads straight into the buffer: `writable()` is the free space to read into, `advance(n)` counts
    the `n` bytes a read put there, and `next_frame()` returns each complete frame, without its size prefix, or None
    until one is complete. So every byte is copied once after the kernel's copy into the buffer: when its frame is
    returned as `bytes`. (Reads kept as separate `bytes` objects, or appended to a growing buffer, cost one to four
    more copies, and under TLS one Python object per TLS record.)

    A large frame (a body of `LARGE_FRAME_BYTES` or more: a producer's megabyte requests) that is at the front of the
    buffer when its size prefix arrives is not copied, but for what came in the same read (at most the receive
    buffer's free space: 64 KiB for a connection that sends only large frames). From then on the reads go into a
    `bytearray` of its own, and `next_frame()` returns a read-only `memoryview` of it. (One that arrives behind a
    frame not yet taken is read into the receive buffer and copied like any other; the server takes frames as they
    complete and pauses reading after a large one, so that is rare.) The buffer is used again for a later large frame
    only when no view of it is left (a `bytearray` refuses to change size while a view of it exists, which
    `_unshared` asks), so a request's records may stay views of it for as long as they are needed (an acks=all
    answer keeps them until its fsync). Up to `_SPARE_BYTES` of such buffers are kept for reuse, so a producer's
    steady stream of large requests allocates none; `release()` gives them back.

    Space: the buffer starts at `initial_bytes` and grows only to hold the frame in progress (under
    `LARGE_FRAME_BYTES` + 4 when frames are taken as they complete). A buffer grown up to `_KEEP_BYTES` is
    kept for the next frame; a larger one shrinks back once its frame has been taken; `release()` gives it all back,
    large-frame buffers too, while nothing is buffered (the server calls it for a quiet connection). Consumed bytes
    are reclaimed when the buffer empties (no copy) or, when free space runs short, by moving the unread bytes to the
    front (a copy of less than one frame). The buffer never changes size while a view of it may be held by the
    transport: a larger or smaller buffer is a new `bytearray`, and `writable()` is the only place that replaces or
    moves anything.

    A size prefix over `max_frame_bytes` (Kafka's `socket.request.max.bytes`) or below zero is a `ProtocolError` from
    `next_frame` as soon as its 4 bytes are in, before any buffer grows for the body.
    """

    __slots__ = (
        "_buf",
        "_end",
        "_initial",
        "_large",
        "_large_filled",
        "_large_size",
        "_size",
        "_spares",
        "_start",
        "_view",
        "max_frame_bytes",
    )

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, initial_bytes: int = 64 * 1024) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._initial = initial_bytes
        self._buf = bytearray(initial_bytes)
        self._view = memoryview(self._buf)
        self._start = 0  # the first byte not yet taken
        self._end = 0  # one past the last byte read
        self._size = -1  # the body size of the frame at `_start`, once its prefix is in and valid; -1 until then
        # The large frame read into a buffer of its own, ahead of whatever the receive buffer holds: its buffer, body
        # size and the bytes of the body read so far. Once complete, later reads go to the receive buffer again.
        self._large: bytearray | None = None
        self._large_size = 0
        self._large_filled = 0
        self._spares: list[bytearray] = []  # buffers of earlier large frames, for reuse once no view of them is left

    @property
    def buffered(self) -> int:
        """Bytes read and not yet returned as a frame."""
        ahead = _SIZE.size + self._large_filled if self._large is not None else 0
        return ahead + self._end - self._start

    @property
    def capacity(self) -> int:
        """The receive buffer's size now (for tests and memory accounting; large-frame buffers not included)."""
        return len(self._buf)

    def release(self) -> bool:
        """Give the buffers' memory back while nothing is buffered (an idle connection holds none); the next
        `writable()` allocates again. True when memory was released."""
        if self.buffered or not (len(self._buf) or self._spares):
            return False
        self._buf = bytearray()
        self._view = memoryview(self._buf)
        self._start = self._end = 0
        self._spares = []
        return True

    def writable(self) -> memoryview:
        """The free space to read into next: room for the rest of the frame in progress, and at least `_MIN_READ_ROOM`
        bytes; for a large frame, the rest of its body in its own buffer."""
        large = self._large
        if large is not None and self._large_filled < self._large_size:
            return memoryview(large)[self._large_filled : self._large_size]
        start, end = self._start, self._end
        if start == end and start:
            self._start = self._end = start = end = 0
        pending = end - start
        size = self._size
        if size >= LARGE_FRAME_BYTES and pending < size + _SIZE.size and large is None:
            return self._begin_large(size, start, end)
        wanted = size + _SIZE.size - pending if size >= 0 else 0
        room = max(wanted, _MIN_READ_ROOM)
        capacity = len(self._buf)
        if capacity - end < room or (capacity > _KEEP_BYTES and pending + room <= self._initial):
            if pending + room <= capacity <= _KEEP_BYTES:  # moved to the front, never resized
                unread = self._view[start:end]
                self._buf[:pending] = unread if start >= pending else unread.tobytes()  # overlapping: via a copy
            else:
                buf = bytearray(max(self._initial, pending + room))
                buf[:pending] = self._view[start:end]
                self._buf, self._view = buf, memoryview(buf)
            self._start, self._end = 0, pending
            end = pending
        return self._view[end:]

    def advance(self, count: int) -> bool:
        """Count `count` bytes just read into `writable()`; True when a frame is complete (or its prefix is invalid,
        which `next_frame` then raises)."""
        large = self._large
        if large is not None and self._large_filled < self._large_size:
            self._large_filled += count
            return self._large_filled >= self._large_size
        self._end += count  # after a complete large frame not yet taken, reads go to the receive buffer
        size = self._frame_size()
        if large is not None or size is None:
            return large is not None
        return not 0 <= size <= self.max_frame_bytes or self._end - self._start >= size + _SIZE.size

    def next_frame(self) -> bytes | memoryview | None:
        """The next complete frame without its size prefix, or None until more bytes are read: `bytes`, or a
        read-only `memoryview` for a large frame (see the class docstring)."""
        large = self._large
        if large is not None:
            if self._large_filled < self._large_size:
                return None
            self._large = None
            return memoryview(large)[: self._large_size].toreadonly()
        size = self._frame_size()
        if size is None:
            return None
        if not 0 <= size <= self.max_frame_bytes:
            raise ProtocolError(f"frame size {size} outside [0, {self.max_frame_bytes}] (socket.request.max.bytes)")
        if self._end - self._start < size + _SIZE.size:
            return None
        body = self._start + _SIZE.size
        self._start = body + size
        self._size = -1
        return bytes(self._view[body : body + size])

    def _begin_large(self, size: int, start: int, end: int) -> memoryview:
        """Move the large frame at `start` (its prefix and the body bytes read so far) out of the receive buffer into
        a buffer of its own, and return the room for the rest of its body. Nothing follows the frame in the receive
        buffer: the frame is not complete."""
        large = self._spare(size)
        have = end - start - _SIZE.size
        large[:have] = self._view[start + _SIZE.size : end]
        self._start = self._end = 0
        self._size = -1
        self._large = large
        self._large_size = size
        self._large_filled = have
        return memoryview(large)[have:size]

    def _spare(self, size: int) -> bytearray:
        """A buffer of at least `size` bytes that no view refers to: a kept one, else a new one. Kept buffers stay
        within `_SPARE_BYTES`: over it, one no view refers to is let go first (its memory is freed at once), else the
        oldest (freed when its last view is)."""
        for buffer in self._spares:
            if len(buffer) >= size and _unshared(buffer):
                return buffer
        if size > _SPARE_BYTES // 4:
            return bytearray(size)
        buffer = bytearray(size + size // 8)  # room for the next request to be a little larger
        spares = self._spares
        spares.append(buffer)
        while sum(map(len, spares)) > _SPARE_BYTES:
            unused = [index for index, spare in enumerate(spares[:-1]) if _unshared(spare)]
            del spares[unused[0] if unused else 0]
        return buffer

    def _frame_size(self) -> int | None:
        """The size prefix of the frame at `_start` (None until its 4 bytes are in); a valid one is kept in `_size`."""
        if self._size >= 0:
            return self._size
        if self._end - self._start < _SIZE.size:
            return None
        (size,) = _SIZE.unpack_from(self._buf, self._start)
        if 0 <= size <= self.max_frame_bytes:
            self._size = size
        return int(size)


def _unshared(buffer: bytearray) -> bool:
    """Whether no view of `buffer` exists: a `bytearray` refuses to change size while one does (BufferError). Its
    last byte is popped and put back, which never moves the buffer."""
    try:
        last = buffer.pop()
    except BufferError:
        return False
    buffer.append(last)
    return True


class RequestHeader(NamedTuple):
    """A decoded request header, whichever its version (v0 has no client_id). A named tuple, not a frozen
    dataclass: one is built per request, and a tuple is built several times faster."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def _new_header(api_key: int, api_version: int, correlation_id: int, client_id: str | None) -> RequestHeader:
    """`RequestHeader(...)` without a call to the named tuple's `__new__`, which is Python code even where this module
    is compiled (about a thousand instructions a request)."""
    return tuple.__new__(RequestHeader, (api_key, api_version, correlation_id, client_id))


def peek_request(frame: bytes | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fields every request header version starts with."""
    if len(frame) < _API_SIZE:
        raise ProtocolError(f"request frame of {len(frame)} bytes is shorter than a request header")
    # Typed names rather than int() around each: the compiled form then checks each field's type in place of a call.
    api_key: int
    api_version: int
    correlation_id: int
    api_key, api_version, correlation_id = _API.unpack_from(frame)
    return api_key, api_version, correlation_id


def decode_request_header(
    frame: bytes | memoryview, header_version: int, peeked: tuple[int, int, int] | None = None
) -> tuple[RequestHeader, int]:
    """Decode a request header of the given version; returns it and the offset where the body starts. `peeked`:
    what `peek_request` already read from this frame, not read again.

    Decoded field by field with kio's primitive readers rather than its header entity, because kio's entity reader
    rejects tagged fields it does not know, and Kafka requires unknown tagged fields to be skipped.
    """
    if header_version not in (0, 1, 2):
        raise ValueError(f"no request header version {header_version}")
    api_key, api_version, correlation_id = peek_request(frame) if peeked is None else peeked
    offset = _API_SIZE
    if header_version == 0:
        return _new_header(api_key, api_version, correlation_id, None), offset
    try:
        client_id, size = read_nullable_legacy_string(frame, offset)
        offset += size
        if header_version == 2:
            offset = _skip_tagged_fields(frame, offset)
    except (SerialError, ValueError) as e:  # kio: ValueError for a varint longer than 5 bytes
        raise ProtocolError(f"undecodable request header v{header_version}: {e}") from e
    return _new_header(api_key, api_version, correlation_id, client_id), offset


def encode_unsigned_varint(value: int) -> bytes:
    """Kafka's unsigned varint (compact lengths, tagged-field counts and tags): 7 bits a byte, low bits first, as
    kio writes it (an unsigned 32-bit value); written here because every flexible Produce answer needs two or three
    and kio's writer goes through a stream."""
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"{value} does not fit an unsigned varint")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_count(n: int, flexible: bool) -> bytes:
    """An array's element count as a response writes it: an int32, or from a message's first flexible version an
    unsigned varint of n + 1 (the answers `produce_response` and `fetch_response` write)."""
    return encode_unsigned_varint(n + 1) if flexible else _SIZE.pack(n)


def encode_string(text: str, flexible: bool) -> bytes:
    """A non-null string as a response writes it: its UTF-8 length as an int16, or (flexible) an unsigned varint of
    length + 1, then the UTF-8 bytes."""
    data = text.encode()
    if flexible:
        return encode_unsigned_varint(len(data) + 1) + data
    return _STRING_LENGTH.pack(len(data)) + data


def _skip_tagged_fields(frame: bytes | memoryview, offset: int) -> int:
    count, size = read_unsigned_varint(frame, offset)
    offset += size
    for _ in range(count):
        _tag, size = read_unsigned_varint(frame, offset)
        offset += size
        length, size = read_unsigned_varint(frame, offset)
        offset += size + length
    if offset > len(frame):
        raise ProtocolError("request header tagged fields run past the end of the frame")
    return offset


def frame_response(correlation_id: int, header_version: int, body: bytes) -> bytes:
    """A complete response frame: size, response header v0 or v1, body."""
    header = _SIZE.pack(correlation_id) + (b"\x00" if header_version == 1 else b"")  # v1: empty tagged fields
    return _SIZE.pack(len(header) + len(body)) + header + body


_write_api_versions_v0 = entity_writer(ApiVersionsResponse)


def api_versions_fallback(correlation_id: int, ranges: Iterable[tuple[int, int, int]]) -> bytes:
    """The frame answering an ApiVersions request at an unsupported version: v0 body, UNSUPPORTED_VERSION, our ranges.

    `ranges` holds (api_key, min_version, max_version) triples.
    """
    body = ApiVersionsResponse(
        error_code=ErrorCode(UNSUPPORTED_VERSION),
        api_keys=tuple(ApiVersion(api_key=i16(k), min_version=i16(lo), max_version=i16(hi)) for k, lo, hi in ranges),
    )
    buffer = io.BytesIO()
    _write_api_versions_v0(buffer, body)
    return frame_response(correlation_id, 0, buffer.getvalue())
