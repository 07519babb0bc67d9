"""One connection as an asyncio buffered protocol: request frames in (`next_frame`), answers out (`write`, `drain`).

Why a protocol of our own rather than asyncio's `StreamReader`/`StreamWriter`: the event loop reads straight into the
connection's `protocol.wire.FrameBuffer` (`get_buffer`/`buffer_updated`), and the connection's coroutine is woken only
when a whole frame is in, so a byte is copied once after the kernel's copy (when its frame is taken) and a large frame
arriving in many reads wakes nobody until it is complete. With a stream reader every read became a `bytes` object,
was appended to the reader's buffer and sliced out again; under TLS (where the event loop's TLS transport hands a
buffered protocol all the decrypted records that fit, in one call) it was one `bytes` object per TLS record as well.

Flow control, both ways:
  - reading: once complete frames and more are buffered past `PAUSE_READING_BYTES`, the transport stops reading
    (the kernel's socket buffer, then the client, wait) until the coroutine has taken every complete frame. A frame
    in progress never pauses reading, so a large frame always completes.
  - writing: `drain()` waits while the transport is over its high-water mark (`pause_writing`), as a stream
    writer's does, and raises `ConnectionResetError` once the connection is lost.

End of stream: `next_frame()` returns None at a clean end (bytes of an unfinished frame are in `buffered`), and raises
the transport's error (e.g. `ssl.SSLError`, `ConnectionResetError`) when the connection was lost to one. A half-closed
plaintext connection stays open for writing, so answers to the requests already read still go out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from kafkalite.protocol.wire import FrameBuffer

PAUSE_READING_BYTES: Final = 256 * 1024


class FrameStream(asyncio.BufferedProtocol):
    """A client connection's transport, frames in and answers out; `on_connected` is called once it is made."""

    def __init__(self, max_frame_bytes: int, on_connected: Callable[[FrameStream], None] | None = None) -> None:
        self.frames = FrameBuffer(max_frame_bytes)
        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # set by connection_made
        self.task: asyncio.Task[None] | None = None  # the task serving the connection (a strong reference to it)
        self._loop = asyncio.get_running_loop()
        self.last_read = self._loop.time()  # loop time of the last read that brought bytes
        self._on_connected = on_connected
        self._frame_waiter: asyncio.Future[None] | None = None
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._reading_paused = False
        self._writing_paused = False
        self._ended = False  # no more bytes will be read: end of stream, or the connection is lost
        self._lost = False
        self._aborted = False  # `abort()` was called: writes are dropped
        self._error: BaseException | None = None
        self._closed: asyncio.Future[None] = self._loop.create_future()

    # -- the event loop's side ------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport: it reads and writes
        if self._on_connected is not None:
            self._on_connected(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.writable()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_read = self._loop.time()
        if self.frames.advance(nbytes):
            self._wake_reader()
            if not self._reading_paused and self.frames.buffered >= PAUSE_READING_BYTES:
                self._reading_paused = True
                self.transport.pause_reading()

    def eof_received(self) -> bool:
        self._ended = True
        self._wake_reader()
        return self.transport.get_extra_info("sslcontext") is None  # plaintext: keep writing; TLS cannot half-close

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = self._lost = True
        self._error = exc
        self._wake_reader()
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_exception(ConnectionResetError("Connection lost"))
        self._drain_waiters.clear()
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    def _wakeup(self) -> asyncio.Future[None]:
        """A future that `_wake_reader` completes: when a frame is complete, or the stream ends."""
        self._frame_waiter = waiter = self._loop.create_future()
        return waiter

    def _wake_reader(self) -> None:
        waiter = self._frame_waiter
        if waiter is not None:
            self._frame_waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # -- the connection coroutine's side ---------------------------------------------------------------------------

    async def next_frame(self) -> bytes | memoryview | None:
        """The next request frame (without its size prefix; a read-only view for a large one, see `FrameBuffer`);
        None at the end of the stream.

        Raises `ProtocolError` for a size prefix out of range, and the transport's error if the connection was lost
        to one.
        """
        frames = self.frames
        frame = frames.next_frame()
        while frame is None:
            if self._reading_paused:
                self._reading_paused = False
                self.transport.resume_reading()
            if self._ended:
                if self._error is not None:
                    raise self._error
                return None
            await self._wakeup()
            frame = frames.next_frame()
        return frame

    async def linger(self, seconds: float) -> None:
        """Wait until the peer ends the stream or the connection is lost, at most `seconds`; what it sends meanwhile
        stays unread. For a connection closed after an answer (a refused login): some clients read an answer and the
        end of the stream that arrive together as a lost connection and drop the answer, so the peer, having read
        it, is given the chance to close first."""
        deadline = self._loop.time() + seconds
        while not self._ended and (left := deadline - self._loop.time()) > 0:
            try:
                await asyncio.wait_for(self._wakeup(), left)
            except TimeoutError:
                return

    def write(self, data: bytes) -> None:
        if not self._aborted:
            self.transport.write(data)

    async def drain(self) -> None:
        """Wait until the transport takes more (as `StreamWriter.drain`); `ConnectionResetError` once it is lost."""
        if self._lost:
            raise ConnectionResetError("Connection lost")
        if not self._writing_paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def close(self) -> None:
        self.transport.close()

    def abort(self) -> None:
        """Close at once, dropping whatever the transport has not sent yet; later writes are dropped too."""
        self._aborted = True
        self.transport.abort()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)
