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
     for a `FileRecords` it waits until the transport has written everything before it, then calls `os.sendfile`
     from the segment file to the socket until the range is out, waiting for the socket to be writable between calls.

Transports that cannot `sendfile` (TLS: the kernel would send the plaintext) get the same frame with each range read
into memory at send time (`FileRecords.unsent_bytes`): the copying path, unchanged in what it sends. So do ranges
that a truncation `preserve`d (see `storage.file_records`). A range whose file ends before its length (which only an
unannounced change of the file could cause) raises `OSError`, and the connection closes rather than send other
bytes: a client retries a failed fetch, but could not detect wrong records with a valid CRC.

Every `FileRecords` is closed once sent, when its frame is dropped unsent (`SplicedFrame.close`), and by its own
finalizer as the last resort.
"""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Iterator
from typing import Any

from kafkalite.storage import FileRecords

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
            prefix_at, prefix = at - 1, _uvarint(len(records) + 1)
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


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class FrameSender:
    """Writes `SplicedFrame`s to one connection's transport, with `os.sendfile` when `sendfile` is allowed."""

    __slots__ = ("_loop", "_socket_fd", "_wait_fd", "_writer")

    def __init__(self, writer: asyncio.StreamWriter, *, sendfile: bool) -> None:
        self._writer = writer
        self._loop = asyncio.get_running_loop()
        sock = writer.get_extra_info("socket") if sendfile else None
        self._socket_fd: int | None = None if sock is None else sock.fileno()
        self._wait_fd: int | None = None  # a dup of the socket to wait on: the loop refuses the transport's own fd

    async def send(self, frame: SplicedFrame) -> None:
        try:
            for part in frame.parts:
                if type(part) is bytes:
                    self._writer.write(part)
                elif isinstance(part, FileRecords):
                    await self._send_records(part)
            await self._writer.drain()
        finally:
            frame.close()

    def close(self) -> None:
        if self._wait_fd is not None:
            fd, self._wait_fd = self._wait_fd, None
            os.close(fd)

    async def _send_records(self, records: FileRecords) -> None:
        if self._socket_fd is None or records.preserved is not None:
            data = records.unsent_bytes()
            self._writer.write(data)
            records.advance(len(data))
            return
        await self._flushed()
        while records.sent < records.size:
            if records.preserved is not None:  # cut while we waited for the socket: the rest is in memory now
                data = records.preserved
                self._writer.write(data)
                records.advance(len(data))
                return
            try:
                sent = os.sendfile(
                    self._socket_fd, records.fd, records.position + records.sent, records.size - records.sent
                )
            except BlockingIOError:
                await self._writable()
                continue
            if sent == 0:
                raise OSError(f"stored batches ended {records.size - records.sent} bytes early: not sending the rest")
            records.advance(sent)

    async def _flushed(self) -> None:
        """Until the transport has handed everything written before to the kernel (so bytes stay in order)."""
        transport = self._writer.transport
        if not transport.get_write_buffer_size():
            return
        high, low = transport.get_write_buffer_limits()
        transport.set_write_buffer_limits(high=0, low=0)  # drain() now waits for an empty buffer
        try:
            await self._writer.drain()
        finally:
            transport.set_write_buffer_limits(high=high, low=low)

    async def _writable(self) -> None:
        if self._wait_fd is None:
            assert self._socket_fd is not None
            self._wait_fd = os.dup(self._socket_fd)
        fd = self._wait_fd
        ready: asyncio.Future[None] = self._loop.create_future()
        self._loop.add_writer(fd, _set_ready, ready)
        try:
            await ready
        finally:
            self._loop.remove_writer(fd)
        if self._writer.transport.is_closing():
            raise ConnectionResetError("the connection closed during a zero-copy send")


def _set_ready(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)
