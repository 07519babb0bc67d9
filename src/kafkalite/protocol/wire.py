"""Kafka wire framing and request/response headers, sans-I/O.

Frame = 4-byte big-endian signed size N, then N bytes. A request frame is a request header followed by the body; a
response frame is a response header followed by the body. The header version follows from the API key and version:

    request header v0  api_key int16, api_version int16, correlation_id int32       (ControlledShutdown v0 only)
    request header v1  v0 + client_id nullable int16-length string                   (every non-flexible request)
    request header v2  v1 + tagged fields; client_id stays a non-compact string       (every flexible request)
    response header v0 correlation_id int32                                          (non-flexible, and ApiVersions)
    response header v1 v0 + tagged fields                                            (flexible, except ApiVersions)

`FrameDecoder` splits a byte stream into frames without ever holding more than the current partial frame plus what
was fed; a size over the configured maximum (Kafka's `socket.request.max.bytes`) or below zero is a `ProtocolError`
as soon as its 4-byte prefix arrives, before any of the body is buffered.

An ApiVersions request at a version we do not serve is answered with a v0 body carrying UNSUPPORTED_VERSION (35) and
our ranges (KIP-511): clients retry at a version we do list. `api_versions_fallback` builds that frame.

Nothing here touches sockets, files or an event loop.
"""

from __future__ import annotations

import enum
import io
import struct
from collections import deque
from collections.abc import Iterable
from typing import Final, NamedTuple

from kio.schema.api_versions.v0.response import ApiVersion, ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial.errors import SerialError
from kio.serial.readers import read_nullable_legacy_string, read_unsigned_varint
from kio.serial.writers import write_unsigned_varint
from kio.static.primitive import i16, uvarint

from kafkalite.errors import ProtocolError

DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024  # socket.request.max.bytes
UNSUPPORTED_VERSION: Final = 35

_SIZE = struct.Struct(">i")
_API = struct.Struct(">hhi")  # api_key, api_version, correlation_id: the first 8 bytes of every request header


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


class FrameDecoder:
    """Split a byte stream into size-prefixed frames: `feed` bytes, then take frames with `next_frame` until None.

    Fed bytes are kept as the chunks they arrived in, not copied into one growing buffer: a frame is copied out once,
    by joining the pieces of the chunks it spans, or is the chunk itself when one read brought exactly its body. (A
    growing `bytearray` cost four copies of every byte, plus page faults on each large re-allocation: the extend, its
    re-allocations, the slice, and `bytes()` of the slice.) The size prefix is checked against `max_frame_bytes` as
    soon as its 4 bytes are in, before the body arrives.
    """

    __slots__ = ("_available", "_chunks", "_size", "_start", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._chunks: deque[bytes] = deque()
        self._start = 0  # bytes of `_chunks[0]` already taken
        self._available = 0  # bytes in `_chunks` not yet taken
        self._size: int | None = None  # the size of the frame in progress, once its prefix is taken

    def feed(self, data: bytes) -> None:
        if data:
            self._chunks.append(data)
            self._available += len(data)

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a frame (a taken size prefix counts until its frame is returned)."""
        return self._available + (_SIZE.size if self._size is not None else 0)

    def bytes_wanted(self) -> int:
        """How many more bytes complete the next frame (at least 1): a good size for the next read."""
        if self._size is None:
            return max(1, _SIZE.size - self._available)
        return max(1, self._size - self._available)

    def next_frame(self) -> bytes | None:
        """The next complete frame without its size prefix, or None until more bytes are fed."""
        if self._size is None:
            if self._available < _SIZE.size:
                return None
            (size,) = _SIZE.unpack(self._take(_SIZE.size))
            if size < 0 or size > self.max_frame_bytes:
                raise ProtocolError(f"frame size {size} outside [0, {self.max_frame_bytes}] (socket.request.max.bytes)")
            self._size = size
        if self._available < self._size:
            return None
        frame = self._take(self._size)
        self._size = None
        return frame

    def _take(self, count: int) -> bytes:
        """The next `count` bytes (all fed already), copied at most once."""
        if not count:
            return b""
        self._available -= count
        chunks, start = self._chunks, self._start
        first = chunks[0]
        if len(first) - start > count:
            self._start = start + count
            return first[start : start + count]
        if len(first) - start == count:
            chunks.popleft()
            self._start = 0
            return first if start == 0 else first[start:]
        pieces: list[bytes | memoryview] = [memoryview(first)[start:]]
        needed = count - (len(first) - start)
        chunks.popleft()
        while needed:
            chunk = chunks[0]
            if len(chunk) <= needed:
                pieces.append(chunks.popleft())
                needed -= len(chunk)
            else:
                pieces.append(memoryview(chunk)[:needed])
                self._start = needed
                break
        else:
            self._start = 0
        return b"".join(pieces)


class RequestHeader(NamedTuple):
    """A decoded request header, whichever its version (v0 has no client_id). A named tuple, not a frozen
    dataclass: one is built per request, and a tuple is built several times faster."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def peek_request(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fields every request header version starts with."""
    if len(frame) < _API.size:
        raise ProtocolError(f"request frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _API.unpack_from(frame)
    return int(api_key), int(api_version), int(correlation_id)


def decode_request_header(frame: bytes, header_version: int) -> tuple[RequestHeader, int]:
    """Decode a request header of the given version; returns it and the offset where the body starts.

    Decoded field by field with kio's primitive readers rather than its header entity, because kio's entity reader
    rejects tagged fields it does not know, and Kafka requires unknown tagged fields to be skipped.
    """
    if header_version not in (0, 1, 2):
        raise ValueError(f"no request header version {header_version}")
    api_key, api_version, correlation_id = peek_request(frame)
    offset = _API.size
    if header_version == 0:
        return RequestHeader(api_key, api_version, correlation_id), offset
    try:
        client_id, size = read_nullable_legacy_string(frame, offset)
        offset += size
        if header_version == 2:
            offset = _skip_tagged_fields(frame, offset)
    except (SerialError, ValueError) as e:  # kio: ValueError for a varint longer than 5 bytes
        raise ProtocolError(f"undecodable request header v{header_version}: {e}") from e
    return RequestHeader(api_key, api_version, correlation_id, client_id), offset


def encode_unsigned_varint(value: int) -> bytes:
    """Kafka's unsigned varint (compact lengths, tagged-field counts and tags), written by kio."""
    buffer = io.BytesIO()
    write_unsigned_varint(buffer, uvarint(value))
    return buffer.getvalue()


def _skip_tagged_fields(frame: bytes, offset: int) -> int:
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
