"""The asyncio TCP server: a listener and one coroutine per connection.

Per connection: the event loop reads into the connection's `frame_stream.FrameStream` (a buffered protocol that
splits frames), and for each complete frame the connection's coroutine does decode → handler → encode → write, one
request at a time, so responses leave in request order (as Kafka does; clients pipeline, and the kernel's socket
buffer holds what they send ahead). The receive buffer grows only for the frame in progress, reading pauses while
complete frames wait, and a client that stops reading blocks its own loop at `drain()` instead of growing our
memory.

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

A Fetch answer of the file engine may be a `zero_copy.SplicedFrame` (its record bytes are ranges of segment files):
it goes through the same queue, in order, and the writer task sends it with `zero_copy.FrameSender` (`sendfile` on
plaintext listeners, a copy through the transport on TLS ones).

Listeners: one asyncio server per `security.settings.Listener` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), each with
the address Metadata tells clients on it. TLS listeners accept and shake hands through `tls_accept.TlsListener`
(`loop.connect_accepted_socket` with their `TlsContextSource`'s context) before `_accept`, so that a failed
handshake is logged with the peer and the reason (rate-limited); the certificate subject becomes the principal. Each
connection gets a `security.Session`: on SASL listeners it is unauthenticated until SaslHandshake/SaslAuthenticate
succeed (or raw tokens after a v0 handshake, handled here in `_raw_token`), frames are capped at
`sasl.server.max.receive.size` until then, and a refused login closes the connection after its answer (and is logged,
rate-limited), once the peer has closed its side or `CLOSE_LINGER_S` has passed. `max.connections` and the per-IP
limits refuse a connection at accept; `connections.max.idle.ms` closes idle ones (a sweeper task, which also takes
back the receive buffer of a connection quiet for 5 s); a quota-throttled connection reads nothing until its mute
ends (KIP-219).

Any exception from a frame (oversized, undecodable, unknown API key, unsupported version) or from a handler closes
that one connection with a log line; the listener and every other connection carry on. The lines for bad input and
for connections refused at accept are rate-limited (`REFUSAL_WARNINGS_PER_MINUTE`, then a count of those left out),
since anyone who can reach the port can cause them; a handler's unexpected error is always logged, with its
traceback.

`close()` stops accepting, cancels idle connections, lets busy ones finish the request they are serving (up to
`shutdown_grace_s`, then they are cancelled too) and waits for all of them to be gone. A connection leaving, for
whatever reason, first writes the answers already queued (within the grace), then closes; one still at work when the
grace is over (writing to a client that stopped reading, or held at its bound by answers waiting for the disk) is
cut: its unsent answers are dropped and their waits cancelled, while the fsync rounds go on for the broker's close.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import ssl
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafkalite.errors import AuthenticationError, ProtocolError
from kafkalite.logs import RateLimitedWarnings
from kafkalite.protocol.wire import DEFAULT_MAX_FRAME_BYTES
from kafkalite.security.service import Security
from kafkalite.security.session import Session
from kafkalite.security.settings import Listener, SecurityProtocol, SecuritySettings
from kafkalite.security.tls import TlsContextSource
from kafkalite.server import handlers  # noqa: F401  (importing the package registers every handler)
from kafkalite.server.dispatch import Answer, ServerInfo, dispatch, failed_authentication
from kafkalite.server.frame_stream import FrameStream
from kafkalite.server.tls_accept import HANDSHAKE_WARNINGS_PER_MINUTE, TlsListener
from kafkalite.server.zero_copy import FrameSender, SplicedFrame

if TYPE_CHECKING:
    from kafkalite.broker import Broker

log = logging.getLogger("kafkalite.server")

MAX_PENDING_RESPONSES = 256  # answers queued per connection before the loop stops reading (pipelined durability)
MAX_PENDING_BYTES = 32 * 1024 * 1024  # ... or bytes of them (Fetch answers can be large)
_COALESCE_MAX = 64  # ready answers collected before they are written without waiting for the loop to yield
_COALESCE_MAX_BYTES = 64 * 1024  # ... or bytes of them: a big answer goes out before `drain()` so it counts there
_TLS_HANDSHAKE_TIMEOUT_S: Final = 10.0
CLOSE_LINGER_S: Final = 0.1  # after a refused login's answer, how long the peer may take to close first
BUFFER_RELEASE_IDLE_S: Final = 5.0  # a connection quiet this long gives its receive buffer back
REFUSAL_WARNINGS_PER_MINUTE: Final = 60  # lines for connections closed over bad input or refused at accept


class _Connection:
    """One client connection; `busy` while a request is being served; `stream.last_read`: when it last sent bytes;
    `responses`: its answers not written yet, once it serves requests."""

    __slots__ = ("busy", "host", "peer", "responses", "stream", "task")

    def __init__(self, host: str, port: int, task: asyncio.Task[None], stream: FrameStream) -> None:
        self.host = host
        self.peer = f"{host}:{port}"
        self.task = task
        self.stream = stream
        self.busy = False
        self.responses: _OrderedResponses | None = None


class _OrderedResponses:
    """A connection's answers, written in request order; pending ones (`PendingResponse`) are awaited in turn.

    Answers go straight to the transport while nothing is queued. Once one is pending, it and every later answer are
    queued and a writer task writes them head first, each when it is ready. `put` waits while the queue is full: at
    `MAX_PENDING_RESPONSES` answers, or at `MAX_PENDING_BYTES` of queued answers and of the requests that pending
    answers keep alive (an acks=all Produce's records are views of its frame until it is answered).
    """

    __slots__ = (
        "_flush_due",
        "_loop",
        "_queue",
        "_queued_bytes",
        "_ready",
        "_ready_bytes",
        "_room",
        "_sender",
        "_task",
        "_writer",
    )

    def __init__(self, writer: FrameStream, *, sendfile: bool) -> None:
        self._writer = writer
        self._sender = FrameSender(writer, sendfile=sendfile)  # zero-copy Fetch answers (`sendfile` off for TLS)
        self._loop = asyncio.get_running_loop()
        self._ready: list[bytes] = []  # answers not written yet, older than anything in `_queue`
        self._ready_bytes = 0
        self._flush_due = False
        self._queue: deque[tuple[Answer, int]] = deque()  # (answer, the bytes it counts for)
        self._queued_bytes = 0  # of the `bytes` answers in `_queue`, and of the requests pending ones keep
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

    async def put(self, response: Answer, held: int = 0) -> None:
        """Queue `response` behind the answers before it; `held`: the bytes of its request a pending answer keeps."""
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
            _discard(response)
            self._task.result()  # the writer failed: raise its error here, which closes the connection
        size = len(response) if type(response) is bytes else held if isinstance(response, asyncio.Task) else 0
        self._queue.append((response, size))
        self._queued_bytes += size
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
            head, size = queue[0]
            response = head if head is None or isinstance(head, bytes | SplicedFrame) else await head
            queue.popleft()
            self._queued_bytes -= size
            if self._room is not None and not self._room.done():
                self._room.set_result(None)
            if isinstance(response, SplicedFrame):
                await self._sender.send(response)
            elif response is not None:
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
            self.abandon()

    def abandon(self) -> None:
        """Write nothing more: stop the writer and drop every answer not written yet."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        for response, _ in self._queue:
            _discard(response)
        self._queue.clear()
        self._queued_bytes = 0


def _discard(answer: Answer) -> None:
    """An answer that will not be written (its connection is gone): a pending one stops its wait, or has the error
    it ended with read so that nothing reports it as never retrieved (what it waited for, an fsync round, goes on for
    the others); a spliced frame gives back its file ranges."""
    if isinstance(answer, asyncio.Task):
        if not answer.done():
            answer.cancel()
        elif not answer.cancelled():
            answer.exception()
    elif isinstance(answer, SplicedFrame):
        answer.close()


@dataclass(slots=True)
class _Bound:
    """One listener: its settings, its socket server once started, and what handlers are told about it."""

    listener: Listener
    port: int
    tls: TlsContextSource | None
    info: ServerInfo
    server: asyncio.Server | TlsListener | None = None  # TlsListener: accepts, shakes hands, logs failed handshakes

    @property
    def advertised_host(self) -> str:
        if self.listener.advertised_host is not None:
            return self.listener.advertised_host
        host = self.listener.host
        return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host

    @property
    def advertised_port(self) -> int:
        return self.port if self.listener.advertised_port is None else self.listener.advertised_port


class KafkaServer:
    """A Kafka wire-protocol server in front of one `Broker`, on one or more listeners.

    `host`/`port` (and `advertised_*`) are the one-PLAINTEXT-listener shorthand; `listeners` replaces them with
    Kafka-style listeners (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), and `security` holds the broker-wide settings
    and the credential and ACL stores (made from `security_settings` and the broker's data directory when not given).
    """

    def __init__(
        self,
        broker: Broker,
        host: str = "127.0.0.1",
        port: int = 9092,
        *,
        advertised_host: str | None = None,
        advertised_port: int | None = None,
        listeners: Sequence[Listener] | None = None,
        security_settings: SecuritySettings | None = None,
        security: Security | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        shutdown_grace_s: float = 10.0,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.broker = broker
        self._given_settings = dict(settings or {})
        if listeners is None:
            listeners = (
                Listener("PLAINTEXT", SecurityProtocol.PLAINTEXT, host, port, advertised_host, advertised_port),
            )
        if not listeners:
            raise ValueError("a server needs at least one listener")
        if security is None:
            security = Security(
                security_settings or SecuritySettings(), broker.config.data_dir, fsync=broker.config.fsync
            )
        self.security = security
        self._bound = [
            _Bound(
                listener,
                listener.port,
                None if listener.tls is None else TlsContextSource(listener.tls),
                ServerInfo(broker.node_id, "", 0),
            )
            for listener in listeners
        ]
        self.max_frame_bytes = max_frame_bytes
        self.shutdown_grace_s = shutdown_grace_s
        for bound in self._bound:
            bound.info = self._server_info(bound)
        self._connections: set[_Connection] = set()
        self._per_host: Counter[str] = Counter()
        self._closing = False
        self._sweeper: asyncio.Task[None] | None = None
        self._tls_warnings = RateLimitedWarnings(log, burst=HANDSHAKE_WARNINGS_PER_MINUTE, period_s=60.0)
        self._refusal_warnings = RateLimitedWarnings(log, burst=REFUSAL_WARNINGS_PER_MINUTE, period_s=60.0)

    @property
    def host(self) -> str:
        return self._bound[0].listener.host

    @property
    def port(self) -> int:
        """The first listener's port (after `start()`, the one the kernel picked for port 0)."""
        return self._bound[0].port

    @property
    def advertised_host(self) -> str:
        """The host clients are told to connect to (Metadata, FindCoordinator), on the first listener."""
        return self._bound[0].advertised_host

    @property
    def advertised_port(self) -> int:
        return self._bound[0].advertised_port

    def _server_info(self, bound: _Bound) -> ServerInfo:
        """What handlers on `bound` are told: its advertised address, and the server's own Kafka settings."""
        settings = {
            **self._given_settings,  # as the operator wrote them (server.properties, --override, properties=)
            # The listeners as bound (a port 0 resolved), whether given or from the host/port shorthand.
            "listeners": ",".join(f"{b.listener.name}://{b.listener.host}:{b.port}" for b in self._bound),
            "advertised.listeners": ",".join(
                f"{b.listener.name}://{b.advertised_host}:{b.advertised_port}" for b in self._bound
            ),
        }
        if self.max_frame_bytes != DEFAULT_MAX_FRAME_BYTES:
            settings["socket.request.max.bytes"] = str(self.max_frame_bytes)
        return ServerInfo(self.broker.node_id, bound.advertised_host, bound.advertised_port, tuple(settings.items()))

    @property
    def bootstrap(self) -> str:
        """`host:port` for a client's bootstrap.servers (the first listener)."""
        return f"{self.advertised_host}:{self.advertised_port}"

    def bootstrap_of(self, listener_name: str) -> str:
        """`host:port` of the listener named `listener_name` (e.g. "SASL_SSL")."""
        for bound in self._bound:
            if bound.listener.name == listener_name.upper():
                return f"{bound.advertised_host}:{bound.advertised_port}"
        raise KeyError(f"no listener named {listener_name}")

    @property
    def listeners(self) -> list[tuple[Listener, int]]:
        """Each listener with the port it is bound to."""
        return [(bound.listener, bound.port) for bound in self._bound]

    async def start(self) -> None:
        """Bind every listener and start accepting; with port 0 the kernel picks a free port (see `.listeners`)."""
        try:
            loop = asyncio.get_running_loop()
            for bound in self._bound:
                connected = functools.partial(self._accept, bound)
                if bound.tls is None:
                    bound.server = await loop.create_server(
                        functools.partial(FrameStream, self.max_frame_bytes, functools.partial(self._connected, bound)),
                        bound.listener.host or None,
                        bound.port,
                    )
                else:
                    bound.server = TlsListener(
                        bound.tls,
                        connected,
                        new_stream=functools.partial(FrameStream, self.max_frame_bytes),
                        handshake_timeout_s=_TLS_HANDSHAKE_TIMEOUT_S,
                        warnings=self._tls_warnings,
                    )
                    await bound.server.start(bound.listener.host or None, bound.port)
                bound.port = bound.server.sockets[0].getsockname()[1]
                bound.info = self._server_info(bound)
                log.info(
                    "Listening on %s://%s:%d (advertised %s:%d)",
                    bound.listener.name,
                    bound.listener.host,
                    bound.port,
                    bound.advertised_host,
                    bound.advertised_port,
                )
        except BaseException:
            for bound in self._bound:
                if bound.server is not None:
                    bound.server.close()
            raise
        for bound in self._bound:  # every listener's port is known now: each describes all of them as bound
            bound.info = self._server_info(bound)
        idle_ms = self.security.settings.connections_max_idle_ms
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep(idle_ms / 1000 if idle_ms > 0 else None))

    async def serve_forever(self) -> None:
        if self._bound[0].server is None:
            await self.start()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*(b.server.serve_forever() for b in self._bound if b.server is not None))

    async def close(self) -> None:
        """Stop accepting, finish in-flight requests, close every connection."""
        if self._closing:
            return
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        for bound in self._bound:
            if bound.server is not None:
                bound.server.close()
            if isinstance(bound.server, TlsListener):
                for handshake in list(bound.server.handshakes):
                    if not any(c.task is handshake for c in self._connections):
                        handshake.cancel()  # still shaking hands: nothing to finish
        self.broker.interrupt_long_polls()
        for connection in list(self._connections):
            if not connection.busy:
                connection.task.cancel()
        connections = list(self._connections)
        if connections:
            _, pending = await asyncio.wait([c.task for c in connections], timeout=self.shutdown_grace_s)
            for connection in connections:
                if connection.task in pending:  # the grace is over: nothing more is written, and nothing waited for
                    connection.stream.abort()
                    if connection.responses is not None:
                        connection.responses.abandon()
                    connection.task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for bound in self._bound:
            if bound.server is not None:
                await bound.server.wait_closed()
                log.info("Stopped listening on %s://%s:%d", bound.listener.name, bound.listener.host, bound.port)

    async def __aenter__(self) -> KafkaServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _sweep(self, idle_s: float | None) -> None:
        """Every so often: give back the receive buffers of connections quiet for `BUFFER_RELEASE_IDLE_S`, and
        (connections.max.idle.ms, `idle_s`; None: never) close connections that neither sent a request nor wait
        for an answer for `idle_s`."""
        loop = asyncio.get_running_loop()
        every = BUFFER_RELEASE_IDLE_S if idle_s is None else min(max(idle_s / 4, 0.05), BUFFER_RELEASE_IDLE_S)
        while True:
            await asyncio.sleep(every)
            now = loop.time()
            for connection in list(self._connections):
                if connection.busy:
                    continue
                quiet_s = now - connection.stream.last_read
                if idle_s is not None and quiet_s > idle_s:
                    log.debug("Closing connection from %s idle for over %.0f ms", connection.peer, idle_s * 1000)
                    connection.task.cancel()
                elif quiet_s > BUFFER_RELEASE_IDLE_S:
                    connection.stream.frames.release()

    def _admit(self, host: str) -> str | None:
        """Why a new connection from `host` is refused (max.connections, max.connections.per.ip), or None."""
        settings = self.security.settings
        if len(self._connections) >= settings.max_connections:
            return f"max.connections={settings.max_connections} reached"
        limit = settings.max_connections_per_ip_overrides.get(host, settings.max_connections_per_ip)
        if self._per_host[host] >= limit:
            return f"max.connections.per.ip={limit} reached for {host}"
        return None

    def _connected(self, bound: _Bound, stream: FrameStream) -> None:
        """A plaintext connection is made: serve it in a task of its own."""
        stream.task = asyncio.get_running_loop().create_task(self._accept(bound, stream))

    async def _accept(self, bound: _Bound, stream: FrameStream) -> None:
        host, port = stream.get_extra_info("peername", ("?", 0))[:2]
        task = asyncio.current_task()
        assert task is not None
        connection = _Connection(host, port, task, stream)
        peer = connection.peer
        refusal = "the server is closing" if self._closing else self._admit(host)
        if refusal is not None:
            self._refusal_warnings.warning("Refusing connection from %s: %s", peer, refusal)
            stream.close()
            return
        self._connections.add(connection)
        stats = self.broker.stats.requests
        stats.connections_open += 1
        stats.connections_total += 1
        self._per_host[host] += 1
        sock = stream.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            peercert = stream.get_extra_info("peercert") if bound.tls is not None else None
            session = self.security.session(bound.listener.protocol, host, peercert)
            session.peer = peer
            await self._serve(connection, bound, session, stream)
        except ProtocolError as e:
            self._refusal_warnings.warning("Closing connection from %s: %s", peer, e)
        except ssl.SSLError as e:
            self._refusal_warnings.warning("Closing connection from %s: TLS error (%s)", peer, e.reason or e)
        except (ConnectionError, TimeoutError):
            log.debug("Connection from %s dropped", peer)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("Closing connection from %s after an unexpected error", peer)
        finally:
            self._connections.discard(connection)
            stats.connections_open -= 1
            stats.connections_closed += 1
            self._per_host[host] -= 1
            if not self._per_host[host]:
                del self._per_host[host]
            stream.close()
            with contextlib.suppress(Exception):
                await stream.wait_closed()

    async def _serve(
        self,
        connection: _Connection,
        bound: _Bound,
        session: Session,
        stream: FrameStream,
    ) -> None:
        sasl = bound.listener.protocol.uses_sasl
        stream.frames.max_frame_bytes = session.max_frame_bytes(self.max_frame_bytes)
        responses = connection.responses = _OrderedResponses(stream, sendfile=bound.tls is None)
        loop = asyncio.get_running_loop()
        try:
            while not self._closing:
                frame = await stream.next_frame()
                if frame is None:
                    if stream.frames.buffered:
                        log.debug(
                            "Connection from %s closed mid-frame (%d bytes)", connection.peer, stream.frames.buffered
                        )
                    return
                if session.muted_until and (wait := session.muted_until - loop.time()) > 0:
                    await asyncio.sleep(wait)  # throttled by a quota: the client's next request waits (KIP-219)
                connection.busy = True
                if sasl and session.raw_tokens:
                    await responses.put(await self._raw_token(session, bytes(frame)))
                else:
                    await responses.put(
                        await dispatch(
                            self.broker, bound.info, frame, connection.host, session=session, security=self.security
                        ),
                        len(frame),
                    )
                connection.busy = False
                frame = None  # not held while the next one is read: a large frame's buffer is reused once unreferenced
                if session.close_after_answer:
                    return
                if sasl:
                    stream.frames.max_frame_bytes = session.max_frame_bytes(self.max_frame_bytes)
        finally:
            await responses.close()
            if session.close_after_answer:  # the refusal is written: let the peer read it and close first
                await stream.linger(CLOSE_LINGER_S)

    async def _raw_token(self, session: Session, token: bytes) -> bytes | None:
        """A SASL token in the legacy framing (after SaslHandshake v0): the challenge, size-prefixed, no header."""
        try:
            challenge = await session.authenticate(token)
        except AuthenticationError:
            await failed_authentication(session, self.security)
            return None
        return len(challenge).to_bytes(4, "big") + challenge
