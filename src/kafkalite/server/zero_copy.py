"""Zero-copy Fetch answers: the answer written without kio, the stored batches sent from the segment file (`sendfile`).

How an answer is made (Kafka's way of serving consumers):
  1. The Fetch handler reads each partition with `Partition.read_for_send`; a large read of the file engine comes back
     as `storage.FileRecords` (a descriptor of our own, a position, a length). The handler's answer is a
     `FetchAnswer`: each partition's outcome as plain values, its records as `bytes` or as that `FileRecords`.
  2. Dispatch frames it (`FetchAnswer.frame`): `protocol.fetch_response` writes the body around the records, and a
     `FileRecords` stays a part of its own, so the frame becomes a `SplicedFrame`: bytes and `FileRecords` in
     order, the whole frame's size prefix in front. An answer without one is plain `bytes`. Quotas set the answer's
     throttle time before it is framed (`FetchAnswer.throttled`), and the authorizer adds the topics it refused as
     failed partitions (`FetchAnswer.with_topics`), so those answers are sent from the files too.
  3. The connection's writer sends it in request order (`FrameSender`): the bytes parts go through the transport;
     a `FileRecords` goes from the segment file to the socket with `os.sendfile` while the transport holds nothing
     unsent and the socket takes it; what the socket does not take at once is copied through the transport.

Transports that cannot `sendfile` (TLS: the kernel would send the plaintext) get the same frame with each range read
into memory at send time (`FileRecords.unsent_bytes`): the copying path, unchanged in what it sends. So do ranges
that a truncation `preserve`d (see `storage.file_records`). A range whose file ends before its length (which only an
unannounced change of the file could cause) raises `OSError`, and the connection closes rather than send other
bytes: a client retries a failed fetch, but could not detect wrong records with a valid CRC.

Every `FileRecords` is closed once sent, when its frame is dropped unsent (`SplicedFrame.close`), when the handler
drops an answer (`FetchAnswer.close`: a long poll reading again), and by its own finalizer as the last resort.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Iterator
from typing import Any, Protocol

from kafkalite.protocol.fetch_response import encode_fetch_body
from kafkalite.protocol.messages import ApiSchema
from kafkalite.storage import FileRecords

_INT32 = struct.Struct(">i")

Fetched = tuple[int, int, int, int, int, list[tuple[int, int]] | None, bytes | FileRecords | None]
"""One partition of a Fetch answer: (index, error code, high watermark, last stable offset, log start offset, the
aborted transactions as (producer id, first offset) or None, records). A partition that failed has -1 offsets, no
aborted list and null records (`failed_partition`)."""


class FetchAnswer:
    """A Fetch answer as the handler read it, framed only when it is sent: each topic as the request named it (its
    name, or its id from v13) with its partitions, and the throttle time a quota set."""

    __slots__ = ("throttle_ms", "topics")

    def __init__(self, topics: list[tuple[str | uuid.UUID | None, list[Fetched]]], throttle_ms: int = 0) -> None:
        self.topics = topics
        self.throttle_ms = throttle_ms

    def frame(self, correlation_id: int, schema: ApiSchema) -> bytes | SplicedFrame:
        """The response frame: `bytes`, or a `SplicedFrame` when records are to be sent from segment files."""
        parts = encode_fetch_body(schema.version, self.topics, self.throttle_ms)
        header = _INT32.pack(correlation_id) + (b"\x00" if schema.response_header_version >= 1 else b"")
        size = len(header) + sum(len(part) for part in parts)
        first = parts[0]
        assert isinstance(first, bytes)
        if len(parts) == 1:
            return _INT32.pack(size) + header + first
        parts[0] = _INT32.pack(size) + header + first
        return SplicedFrame(parts, _INT32.size + size)  # type: ignore[arg-type]  # the parts are bytes and FileRecords

    def throttled(self, throttle_ms: int) -> FetchAnswer:
        """This answer with throttle_time_ms at least `throttle_ms`."""
        return FetchAnswer(self.topics, max(self.throttle_ms, throttle_ms))

    def error_codes(self) -> Iterator[int]:
        """The partitions' non-zero error codes (Kafka's ErrorsPerSec counts them)."""
        return (p[1] for _, partitions in self.topics for p in partitions if p[1])

    def files(self) -> Iterator[FileRecords]:
        """The ranges of segment files this answer holds."""
        return (p[6] for _, partitions in self.topics for p in partitions if isinstance(p[6], FileRecords))

    def close(self) -> None:
        """Release the ranges of an answer that will not be sent."""
        for records in self.files():
            records.close()

    def with_topics(self, added: list[tuple[str | uuid.UUID | None, list[Fetched]]]) -> FetchAnswer:
        """This answer with `added` after its own topics (the authorizer's refusals)."""
        return FetchAnswer(self.topics + added, self.throttle_ms)


def failed_partition(index: int, code: int) -> Fetched:
    """A partition answered with an error, as Kafka answers one: -1 offsets, a null aborted list, null records."""
    return index, code, -1, -1, -1, None, None


class SplicedFrame:
    """A response frame as parts to send in order: `bytes` and `FileRecords`; `len()` is the frame's size."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[bytes | FileRecords], size: int) -> None:
        self.parts = parts
        self.size = size

    def __len__(self) -> int:
        return self.size

    def files(self) -> Iterator[FileRecords]:
        return (part for part in self.parts if isinstance(part, FileRecords))

    def close(self) -> None:
        for records in self.files():
            records.close()


class Writer(Protocol):
    """What `FrameSender` needs of a connection (`server.frame_stream.FrameStream`): a protocol, not that class, so the
    compiled form of this module checks no class at run time and tests can pass a writer of their own."""

    @property
    def transport(self) -> Any: ...

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def get_extra_info(self, name: str, default: Any = None) -> Any: ...


class FrameSender:
    """Writes `SplicedFrame`s to one connection's transport, with `os.sendfile` when `sendfile` is allowed.

    Sending never waits in the middle of a frame: a range goes by `sendfile` only while the transport holds nothing
    unsent (so bytes stay in order) and only as far as the socket takes it at once; whatever the socket does not take
    right away, and every range after it in the frame, is read and written through the transport as a copy. So a
    client that keeps up is served from the page cache, a slow one as before, and no descriptor of the socket is ever
    watched beside the transport's own.
    """

    __slots__ = ("_socket_fd", "_writer")

    def __init__(self, writer: Writer, *, sendfile: bool) -> None:
        self._writer = writer
        sock = writer.get_extra_info("socket") if sendfile else None
        self._socket_fd: int | None = None if sock is None else sock.fileno()

    async def send(self, frame: SplicedFrame) -> None:
        try:
            for part in frame.parts:
                if type(part) is bytes:
                    self._writer.write(part)
                elif isinstance(part, FileRecords):
                    self._send_records(part)
                else:  # a part of no known kind: sending the rest would put the stream out of step
                    raise TypeError(f"a response frame part must be bytes or FileRecords, not {type(part).__name__}")
            await self._writer.drain()
        finally:
            frame.close()

    def _send_records(self, records: FileRecords) -> None:
        transport = self._writer.transport
        if self._socket_fd is not None and records.preserved is None and not transport.get_write_buffer_size():
            while records.sent < records.size:
                try:
                    sent = os.sendfile(
                        self._socket_fd, records.fd, records.position + records.sent, records.size - records.sent
                    )
                except BlockingIOError:
                    break  # the socket is full: the rest goes through the transport
                if sent == 0:
                    raise OSError(
                        f"stored batches ended {records.size - records.sent} bytes early: not sending the rest"
                    )
                records.advance(sent)
        if records.sent < records.size:
            data = records.unsent_bytes()
            self._writer.write(data)
            records.advance(len(data))
