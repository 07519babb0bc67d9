"""Zero-copy Fetch answers: the framing encoded as usual, the stored batches sent from the segment file (`sendfile`).

How an answer is made (Kafka's way of serving consumers, with kio as the encoder of everything but the records):
  1. The Fetch handler reads each partition with `Broker.fetch_for_send`; a large read of the file engine comes back
     as `storage.FileRecords` (a descriptor of our own, a position, a length). The handler puts a `Placeholder` in
     the answer's `records` field instead: 16 random bytes that carry the `FileRecords`.
  2. Dispatch encodes the answer with kio as any other (authorization and quotas see an ordinary answer) and then
     `splice`s it: each placeholder's bytes are found in the encoded frame (in answer order, each search starting
     after the previous one; 16 random bytes cannot occur in the framing by chance, and no client chooses them), its
     length prefix (INT32 below v12, an unsigned varint of length + 1 from v12 on) is rewritten for the real length,
     and the frame becomes a `SplicedFrame`: bytes and `FileRecords` in order, and a size prefix for the whole.
  3. The connection's writer sends it in request order (`FrameSender`): the bytes parts go through the transport;
     a `FileRecords` goes from the segment file to the socket with `os.sendfile` while the transport holds nothing
     unsent and the socket takes it; what the socket does not take at once is copied through the transport.

Transports that cannot `sendfile` (TLS: the kernel would send the plaintext) get the same frame with each range read
into memory at send time (`FileRecords.unsent_bytes`): the copying path, unchanged in what it sends. So do ranges
that a truncation `preserve`d (see `storage.file_records`). A range whose file ends before its length (which only an
unannounced change of the file could cause) raises `OSError`, and the connection closes rather than send other
bytes: a client retries a failed fetch, but could not detect wrong records with a valid CRC.

Every `FileRecords` is closed once sent, when its frame is dropped unsent (`SplicedFrame.close`), and by its own
finalizer as the last resort.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kafkalite.protocol.wire import encode_unsigned_varint
from kafkalite.storage import FileRecords

if TYPE_CHECKING:
    from kafkalite.server.frame_stream import FrameStream

_TOKEN_BYTES = 16
_INT32 = struct.Struct(">i")


class Placeholder(bytes):
    """The 16 random bytes standing for `records` in a kio answer until `splice` replaces them."""

    records: FileRecords

    @classmethod
    def of(cls, records: FileRecords) -> Placeholder:
        placeholder = cls(os.urandom(_TOKEN_BYTES))
        placeholder.records = records
        return placeholder


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


def placeholders(response: Any) -> list[Placeholder]:
    """The placeholders of a kio FetchResponse, in the order kio encodes them."""
    return [
        partition.records
        for topic in response.responses
        for partition in topic.partitions
        if type(partition.records) is Placeholder
    ]


def close_placeholders(response: Any) -> None:
    """Release the ranges of an answer that will not be sent (a long poll reads again)."""
    for placeholder in placeholders(response):
        placeholder.records.close()


def splice(frame: bytes, found: list[Placeholder], *, flexible: bool) -> SplicedFrame:
    """`frame` (size prefix included) with each placeholder's bytes and length prefix replaced by its records."""
    parts: list[bytes | FileRecords] = []
    position = _INT32.size
    size = len(frame)
    for placeholder in found:
        at = frame.find(placeholder, position)
        if at < 0:
            raise ValueError("a records placeholder is missing from the encoded Fetch answer")
        records = placeholder.records
        if flexible:  # COMPACT_RECORDS: unsigned varint of length + 1 (17 for the placeholder: one byte)
            prefix_at, prefix = at - 1, encode_unsigned_varint(len(records) + 1)
        else:  # RECORDS: INT32 length
            prefix_at, prefix = at - _INT32.size, _INT32.pack(len(records))
        parts.append(frame[position:prefix_at] + prefix)
        parts.append(records)
        size += len(prefix) - (at - prefix_at) + len(records) - _TOKEN_BYTES
        position = at + _TOKEN_BYTES
    parts.append(frame[position:])
    first = parts[0]
    assert isinstance(first, bytes)
    parts[0] = _INT32.pack(size - _INT32.size) + first
    return SplicedFrame(parts, size)


class FrameSender:
    """Writes `SplicedFrame`s to one connection's transport, with `os.sendfile` when `sendfile` is allowed.

    Sending never waits in the middle of a frame: a range goes by `sendfile` only while the transport holds nothing
    unsent (so bytes stay in order) and only as far as the socket takes it at once; whatever the socket does not take
    right away, and every range after it in the frame, is read and written through the transport as a copy. So a
    client that keeps up is served from the page cache, a slow one as before, and no descriptor of the socket is ever
    watched beside the transport's own.
    """

    __slots__ = ("_socket_fd", "_writer")

    def __init__(self, writer: FrameStream, *, sendfile: bool) -> None:
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
