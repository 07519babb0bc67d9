"""The asyncio TCP server: a listener and one coroutine per connection.

Per connection: read bytes into a `FrameDecoder`, and for each complete frame decode → handler → encode → write, one
request at a time, so responses leave in request order (as Kafka does; clients pipeline, and the kernel's socket
buffer holds what they send ahead). Reads are sized to the frame in progress, so an idle connection holds no buffer
beyond its stream, and a client that stops reading blocks its own loop at `drain()` instead of growing our memory.

Pipelined durability, the one place KafkaLite deliberately differs from "one request at a time": a handler may
answer `AfterDurable` (Produce with acks=-1 does), meaning "my state change is made, my answer waits for an fsync".
The loop then queues that pending answer and goes on to the next request while it waits; one writer task per
connection writes the queued answers strictly in request order, each once it is ready. Every request's handler still
runs to its return before the next request is decoded, so appends stay in request order; answers stay in request
order; an acks=all answer is still written only after its bytes are durable. What changes is only that the append of
request N+1 may start while request N waits for the disk, so its fsync round can cover both (group commit across a
pipelining client's requests, instead of one round trip to the disk per request). At most `MAX_PENDING_RESPONSES`
answers, or `MAX_PENDING_BYTES` of them, may wait per connection; at the bound the loop stops reading until the oldest
is written (backpressure).
A request that is not pending while answers are queued goes into the same queue, so order never depends on which
answers waited.

Answers that are ready at once are not written one `send()` each: they collect while the loop keeps serving the
frames it already has, and go out in one write when the loop next yields (a `call_soon` callback, so an answer never
waits behind a request that blocks, such as a Fetch long poll) or when `_COALESCE_MAX` of them, or
`_COALESCE_MAX_BYTES`, have collected. Order is unchanged (they are written before anything queued after them) and
backpressure too (`drain()` after each answer, which sees a big answer at once).

Any exception from a frame (oversized, undecodable, unknown API key, unsupported version) or from a handler closes
that one connection with a log line; the listener and every other connection carry on.

`close()` stops accepting, cancels idle connections, lets busy ones finish the request they are serving (up to
`shutdown_grace_s`, then they are cancelled too) and waits for all of them to be gone. A connection leaving, for
whatever reason, first writes the answers already queued (within the grace), then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections import deque
from typing import TYPE_CHECKING

from kafkalite.errors import ProtocolError
from kafkalite.protocol.wire import DEFAULT_MAX_FRAME_BYTES, FrameDecoder
from kafkalite.server import handlers  # noqa: F401  (importing the package registers every handler)
from kafkalite.server.dispatch import PendingResponse, ServerInfo, dispatch

if TYPE_CHECKING:
    from kafkalite.broker import Broker

log = logging.getLogger("kafkalite.server")

_READ_CHUNK = 64 * 1024
MAX_PENDING_RESPONSES = 256  # answers queued per connection before the loop stops reading (pipelined durability)
MAX_PENDING_BYTES = 32 * 1024 * 1024  # ... or bytes of them (Fetch answers can be large)
_COALESCE_MAX = 64  # ready answers collected before they are written without waiting for the loop to yield
_COALESCE_MAX_BYTES = _READ_CHUNK  # ... or bytes of them: a big answer goes out before `drain()` so it counts there


class _Connection:
    """One client connection; `busy` while a request is being served."""

    __slots__ = ("busy", "host", "peer", "task")

    def __init__(self, host: str, port: int, task: asyncio.Task[None]) -> None:
        self.host = host
        self.peer = f"{host}:{port}"
        self.task = task
        self.busy = False


class _OrderedResponses:
    """A connection's answers, written in request order; pending ones (`PendingResponse`) are awaited in turn.

    Answers go straight to the transport while nothing is queued. Once one is pending, it and every later answer are
    queued and a writer task writes them head first, each when it is ready. `put` waits while the queue is full.
    """

    __slots__ = (
        "_flush_due",
        "_loop",
        "_queue",
        "_queued_bytes",
        "_ready",
        "_ready_bytes",
        "_room",
        "_task",
        "_writer",
    )

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._loop = asyncio.get_running_loop()
        self._ready: list[bytes] = []  # answers not written yet, older than anything in `_queue`
        self._ready_bytes = 0
        self._flush_due = False
        self._queue: deque[bytes | PendingResponse | None] = deque()
        self._queued_bytes = 0  # of the `bytes` answers in `_queue`
        self._task: asyncio.Task[None] | None = None
        self._room: asyncio.Future[None] | None = None

    @property
    def queued(self) -> int:
        return len(self._queue)

    def _flush(self) -> None:
        """Write the ready answers in one go (also the `call_soon` callback: it runs once the loop yields)."""
        self._flush_due = False
        ready = self._ready
        if ready:
            self._writer.write(ready[0] if len(ready) == 1 else b"".join(ready))
            ready.clear()
            self._ready_bytes = 0

    async def put(self, response: bytes | PendingResponse | None) -> None:
        if self._task is None:
            if type(response) is bytes:
                self._ready.append(response)
                self._ready_bytes += len(response)
                if len(self._ready) >= _COALESCE_MAX or self._ready_bytes >= _COALESCE_MAX_BYTES:
                    self._flush()
                elif not self._flush_due:
                    self._flush_due = True
                    self._loop.call_soon(self._flush)
                await self._writer.drain()
                return
            if response is None:
                return
            self._flush()
            self._task = self._loop.create_task(self._write_in_order())
        elif self._task.done():
            self._task.result()  # the writer failed: raise its error here, which closes the connection
        self._queue.append(response)
        if type(response) is bytes:
            self._queued_bytes += len(response)
        while self._task is not None and (
            len(self._queue) >= MAX_PENDING_RESPONSES or self._queued_bytes >= MAX_PENDING_BYTES
        ):
            self._room = asyncio.get_running_loop().create_future()
            await asyncio.wait([self._room, self._task], return_when=asyncio.FIRST_COMPLETED)
            if self._task is not None and self._task.done():
                self._task.result()

    async def _write_in_order(self) -> None:
        queue = self._queue
        while queue:  # an exception ends the task with it (and `put`/`close` raise it): the connection closes
            head = queue[0]
            response = head if head is None or isinstance(head, bytes) else await head
            queue.popleft()
            if type(head) is bytes:
                self._queued_bytes -= len(head)
            if self._room is not None and not self._room.done():
                self._room.set_result(None)
            if response is not None:
                self._writer.write(response)
                await self._writer.drain()
        self._task = None

    async def close(self) -> None:
        """Write what is queued (the caller bounds the wait), then drop anything left unwritten."""
        try:
            self._flush()
            if self._task is not None:
                await self._task
        finally:
            if self._task is not None:
                self._task.cancel()
            for response in self._queue:
                if response is not None and not isinstance(response, bytes):
                    response.close()
            self._queue.clear()
            self._queued_bytes = 0


class KafkaServer:
    """A Kafka wire-protocol listener in front of one `Broker`."""

    def __init__(
        self,
        broker: Broker,
        host: str = "127.0.0.1",
        port: int = 9092,
        *,
        advertised_host: str | None = None,
        advertised_port: int | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        shutdown_grace_s: float = 10.0,
    ) -> None:
        self.broker = broker
        self.host = host
        self.port = port
        self._advertised_host = advertised_host
        self._advertised_port = advertised_port
        self.max_frame_bytes = max_frame_bytes
        self.shutdown_grace_s = shutdown_grace_s
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._closing = False
        self._info = self._server_info()

    @property
    def advertised_host(self) -> str:
        """The host clients are told to connect to (Metadata, FindCoordinator)."""
        if self._advertised_host is not None:
            return self._advertised_host
        return "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host

    @property
    def advertised_port(self) -> int:
        return self.port if self._advertised_port is None else self._advertised_port

    def _server_info(self) -> ServerInfo:
        settings = (
            ("listeners", f"PLAINTEXT://{self.host}:{self.port}"),
            ("advertised.listeners", f"PLAINTEXT://{self.bootstrap}"),
            ("socket.request.max.bytes", str(self.max_frame_bytes)),
        )
        return ServerInfo(self.broker.node_id, self.advertised_host, self.advertised_port, settings)

    @property
    def bootstrap(self) -> str:
        """`host:port` for a client's bootstrap.servers."""
        return f"{self.advertised_host}:{self.advertised_port}"

    async def start(self) -> None:
        """Bind and start accepting; with port 0 the kernel picks a free port, readable from `.port` afterwards."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port, limit=_READ_CHUNK)
        self.port = self._server.sockets[0].getsockname()[1]
        self._info = self._server_info()
        log.info("Listening on %s:%d (advertised %s)", self.host, self.port, self.bootstrap)

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        with contextlib.suppress(asyncio.CancelledError):
            await self._server.serve_forever()

    async def close(self) -> None:
        """Stop accepting, finish in-flight requests, close every connection."""
        if self._closing:
            return
        self._closing = True
        if self._server is not None:
            self._server.close()
        self.broker.interrupt_long_polls()
        for connection in list(self._connections):
            if not connection.busy:
                connection.task.cancel()
        tasks = [c.task for c in self._connections]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.shutdown_grace_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        log.info("Stopped listening on %s:%d", self.host, self.port)

    async def __aenter__(self) -> KafkaServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = writer.get_extra_info("peername", ("?", 0))[:2]
        task = asyncio.current_task()
        assert task is not None
        connection = _Connection(host, port, task)
        peer = connection.peer
        if self._closing:
            writer.close()
            return
        self._connections.add(connection)
        stats = self.broker.stats.requests
        stats.connections_open += 1
        stats.connections_total += 1
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await self._serve(connection, reader, writer)
        except ProtocolError as e:
            log.warning("Closing connection from %s: %s", peer, e)
        except (ConnectionError, asyncio.IncompleteReadError):
            log.debug("Connection from %s dropped", peer)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("Closing connection from %s after an unexpected error", peer)
        finally:
            self._connections.discard(connection)
            stats.connections_open -= 1
            stats.connections_closed += 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, connection: _Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder(self.max_frame_bytes)
        responses = _OrderedResponses(writer)
        try:
            while not self._closing:
                frame = decoder.next_frame()
                if frame is None:
                    data = await reader.read(max(_READ_CHUNK, decoder.bytes_wanted()))
                    if not data:
                        if decoder.buffered:
                            log.debug(
                                "Connection from %s closed mid-frame (%d bytes)", connection.peer, decoder.buffered
                            )
                        return
                    decoder.feed(data)
                    continue
                connection.busy = True
                await responses.put(await dispatch(self.broker, self._info, frame, connection.host))
                connection.busy = False
        finally:
            await responses.close()
