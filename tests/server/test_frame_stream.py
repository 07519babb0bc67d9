"""`server.frame_stream.FrameStream` over real sockets, on asyncio's loop and on uvloop: frames whole whatever the
reads, end of stream, read pause while complete frames wait, a large frame never stalls, drain after the peer left."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvloop

from kafkalite.errors import ProtocolError
from kafkalite.protocol.wire import LARGE_FRAME_BYTES
from kafkalite.server.frame_stream import PAUSE_READING_BYTES, FrameStream

LOOPS: dict[str, Callable[[Coroutine[Any, Any, None]], None]] = {"asyncio": asyncio.run, "uvloop": uvloop.run}


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Callable[[Callable[[], Awaitable[None]]], None]:
    def run_on_loop(test: Callable[[], Awaitable[None]]) -> None:
        async def bounded() -> None:
            async with asyncio.timeout(30):
                await test()

        LOOPS[request.param](bounded())

    return run_on_loop


@asynccontextmanager
async def one_connection(max_frame_bytes: int = 100 * 1024 * 1024) -> AsyncIterator[tuple[FrameStream, socket.socket]]:
    """A listening `FrameStream` server and one blocking client socket connected to it."""
    loop = asyncio.get_running_loop()
    made: asyncio.Queue[FrameStream] = asyncio.Queue()
    server = await loop.create_server(lambda: FrameStream(max_frame_bytes, made.put_nowait), "127.0.0.1", 0)
    client = socket.create_connection(server.sockets[0].getsockname()[:2])
    try:
        stream = await made.get()
        yield stream, client
    finally:
        client.close()
        server.close()
        await server.wait_closed()


async def send(client: socket.socket, data: bytes) -> None:
    await asyncio.to_thread(client.sendall, data)


def test_frames_arrive_whole_whatever_pieces_they_are_sent_in(run: Callable[..., None]) -> None:
    rng = random.Random(7)
    payloads = [rng.randbytes(rng.choice([0, 1, 100, 5_000, 70_000, 300_000])) for _ in range(60)]
    stream_bytes = b"".join(framed(p) for p in payloads)

    async def test() -> None:
        async with one_connection() as (stream, client):

            def send_in_pieces() -> None:
                position = 0
                while position < len(stream_bytes):
                    size = rng.choice([1, 3, 4, 5, 1000, 16_384, 100_000])
                    client.sendall(stream_bytes[position : position + size])
                    position += size
                client.shutdown(socket.SHUT_WR)

            sender = asyncio.create_task(asyncio.to_thread(send_in_pieces))
            received = []
            while (frame := await stream.next_frame()) is not None:
                if type(frame) is memoryview:  # a large frame, read into a buffer of its own
                    assert len(frame) >= LARGE_FRAME_BYTES
                    frame = frame.tobytes()
                assert type(frame) is bytes
                received.append(frame)
            await sender
            assert received == payloads
            assert stream.frames.buffered == 0

    run(test)


def test_large_frames_held_as_views_stay_intact_while_more_arrive(run: Callable[..., None]) -> None:
    rng = random.Random(11)
    payloads = [rng.randbytes(rng.choice([LARGE_FRAME_BYTES, 700_000, 1_100_000])) for _ in range(24)]

    async def test() -> None:
        async with one_connection() as (stream, client):
            sender = asyncio.create_task(send(client, b"".join(framed(p) for p in payloads)))
            held: list[bytes | memoryview] = []  # as an acks=all answer holds its records until the fsync
            for _ in payloads:
                frame = await stream.next_frame()
                assert frame is not None
                held.append(frame[len(frame) // 2 :])
                del frame
                if len(held) == 12:
                    assert [bytes(v) for v in held] == [p[len(p) // 2 :] for p in payloads[:12]]
            await sender
            assert [bytes(v) for v in held] == [p[len(p) // 2 :] for p in payloads]
            assert isinstance(held[0], memoryview)  # the first, at least, was read into a buffer of its own

    run(test)


def test_a_half_closed_connection_can_still_be_answered(run: Callable[..., None]) -> None:
    async def test() -> None:
        async with one_connection() as (stream, client):
            await send(client, framed(b"request"))
            client.shutdown(socket.SHUT_WR)
            assert await stream.next_frame() == b"request"
            assert await stream.next_frame() is None
            stream.write(b"answer")
            await stream.drain()
            assert await asyncio.to_thread(client.recv, 100) == b"answer"

    run(test)


def test_the_end_of_stream_mid_frame_leaves_the_partial_bytes_counted(run: Callable[..., None]) -> None:
    async def test() -> None:
        async with one_connection() as (stream, client):
            await send(client, framed(b"whole") + framed(b"cut short")[:7])
            client.shutdown(socket.SHUT_WR)
            assert await stream.next_frame() == b"whole"
            assert await stream.next_frame() is None
            assert stream.frames.buffered == 7

    run(test)


def test_a_size_over_the_limit_is_refused_before_its_body(run: Callable[..., None]) -> None:
    async def test() -> None:
        async with one_connection(max_frame_bytes=1024) as (stream, client):
            await send(client, struct.pack(">i", 50_000_000))
            with pytest.raises(ProtocolError, match="frame size 50000000"):
                await stream.next_frame()
            assert stream.frames.capacity < 1024 * 1024

    run(test)


def test_reading_pauses_while_complete_frames_wait_and_resumes_once_they_are_taken(run: Callable[..., None]) -> None:
    frame_count = 8 * PAUSE_READING_BYTES // 1000

    async def test() -> None:
        async with one_connection() as (stream, client):
            stream.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
            frames = b"".join(framed(b"r" * 996) for _ in range(frame_count))
            sender = asyncio.create_task(send(client, frames))
            while stream.frames.buffered < PAUSE_READING_BYTES:  # nobody takes frames: they pile up to the mark
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)
            assert not stream.transport.is_reading()
            assert stream.frames.buffered < PAUSE_READING_BYTES + 300 * 1024  # one read past the mark at most
            assert not sender.done()  # the rest waits in the kernel and the client
            for _ in range(frame_count):
                assert await stream.next_frame() == b"r" * 996
            await sender
            await send(client, framed(b"last"))  # reading must have resumed for this one to arrive
            assert await stream.next_frame() == b"last"
            assert stream.transport.is_reading()

    run(test)


def test_a_frame_larger_than_the_pause_mark_still_completes(run: Callable[..., None]) -> None:
    large = random.Random(1).randbytes(4 * PAUSE_READING_BYTES)

    async def test() -> None:
        async with one_connection() as (stream, client):
            sender = asyncio.create_task(send(client, framed(large) + framed(b"after")))
            assert await stream.next_frame() == large
            assert await stream.next_frame() == b"after"
            await sender

    run(test)


def test_drain_raises_once_the_peer_is_gone(run: Callable[..., None]) -> None:
    async def test() -> None:
        async with one_connection() as (stream, client):
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # a reset, not an orderly end

            async def answer_until_refused() -> None:
                while True:
                    await stream.next_frame()  # None at the end, or the reset itself
                    stream.write(b"x" * 100_000)
                    await stream.drain()
                    await asyncio.sleep(0.01)

            with pytest.raises(ConnectionError):
                await answer_until_refused()
            await stream.wait_closed()

    run(test)


def test_linger_ends_when_the_peer_closes_or_at_the_bound(run: Callable[..., None]) -> None:
    async def test() -> None:
        loop = asyncio.get_running_loop()
        async with one_connection() as (stream, client):
            began = loop.time()
            await stream.linger(0.2)  # the peer stays: the bound ends it
            assert loop.time() - began >= 0.19
            closer = loop.call_later(0.05, client.shutdown, socket.SHUT_WR)
            began = loop.time()
            await stream.linger(10)  # the peer closes its side: over at once
            assert loop.time() - began < 5
            closer.cancel()

    run(test)
