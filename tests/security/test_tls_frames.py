"""`server.frame_stream.FrameStream` under the event loop's TLS transport (asyncio's and uvloop's), where it is a
buffered protocol reading decrypted records straight into its buffer: frames whole whether a TLS record holds a piece
of a frame or many frames, and an answer goes back through the same transport."""

from __future__ import annotations

import asyncio
import random
import socket
import ssl
import struct
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop
from certs import Pki

from kafkalite.server.frame_stream import FrameStream

LOOPS: dict[str, Callable[[Coroutine[Any, Any, None]], None]] = {"asyncio": asyncio.run, "uvloop": uvloop.run}


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
@pytest.mark.parametrize("record_bytes", [1, 5, 1000, 16_384], ids=lambda size: f"records-of-{size}-bytes")
def test_frames_arrive_whole_in_tls_records_of_any_size(pki: Pki, loop_name: str, record_bytes: int) -> None:
    _, _, server_pem = pki.issue("localhost", server=True)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(server_pem)
    client_context = ssl.create_default_context(cafile=str(pki.ca_file))
    rng = random.Random(record_bytes)
    sizes = [0, 10, 1000, 40_000, 200_000] if record_bytes >= 1000 else [0, 3, 10, 300, 2_000]  # bounded test time
    payloads = [rng.randbytes(rng.choice(sizes)) for _ in range(40)]
    stream_bytes = b"".join(framed(p) for p in payloads)

    def client(port: int) -> bytes:
        """Each `sendall` of at most 16 KiB is one TLS record (OpenSSL's maximum record size)."""
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            client_context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            for start in range(0, len(stream_bytes), record_bytes):
                tls.sendall(stream_bytes[start : start + record_bytes])
            answer = b""
            while len(answer) < 6:
                answer += tls.recv(6 - len(answer))
            return answer

    async def test() -> None:
        loop = asyncio.get_running_loop()
        made: asyncio.Queue[FrameStream] = asyncio.Queue()
        server = await loop.create_server(
            lambda: FrameStream(1024 * 1024, made.put_nowait), "127.0.0.1", 0, ssl=server_context
        )
        try:
            sender = asyncio.create_task(asyncio.to_thread(client, server.sockets[0].getsockname()[1]))
            stream = await made.get()
            received = [await stream.next_frame() for _ in payloads]
            assert received == payloads
            stream.write(b"answer")
            await stream.drain()
            assert await sender == b"answer"
            stream.close()
            await stream.wait_closed()
        finally:
            server.close()
            await server.wait_closed()

    async def bounded() -> None:
        async with asyncio.timeout(60):
            await test()

    LOOPS[loop_name](bounded())
