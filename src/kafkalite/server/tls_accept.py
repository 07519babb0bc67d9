"""TLS listeners: accept TCP, then shake hands, so that a failed handshake is seen and logged.

Why not `asyncio.start_server(ssl=...)`: there a failed handshake (a scanner, a plaintext client on the TLS port, a
client certificate from an unknown CA, a client that never finishes) disappears without a trace: the event loop's
TLS protocol reports `OSError`s only in debug mode, and the application never hears of the connection. Nor can an
accepted transport be upgraded with `loop.start_tls`: uvloop starts reading right after `connection_made`, so the
first bytes of the ClientHello would be read outside TLS. So `TlsListener` accepts sockets itself (`loop.sock_accept`
on its own listening socket) and hands each to `loop.connect_accepted_socket(..., ssl=context)`: the same TLS
transport the loop builds for `start_server` (uvloop's own under uvloop), which returns once the handshake is done
or raises its reason. A failure is one WARNING line with the peer address and the reason (OpenSSL's, e.g.
`HTTP_REQUEST`, `WRONG_VERSION_NUMBER`, `CERTIFICATE_VERIFY_FAILED`), through `RateLimitedWarnings`, so a scanner
opening thousands of connections cannot flood the log.

A handshake that succeeds hands the connection's `FrameStream` (the protocol the TLS transport reads into, built by
`new_stream`) to `connected`, in the handshake's task, which then serves the connection. Invariants: one accept
task per listener; handshakes under way are tasks in `handshakes` (each then serves its connection); `close()`
stops accepting and closes the listening socket, `wait_closed()` waits for the accept task only (the server waits for
its connections itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Final

from kafkalite.logs import RateLimitedWarnings
from kafkalite.security.tls import TlsContextSource
from kafkalite.server.frame_stream import FrameStream

log = logging.getLogger("kafkalite.server")

Connected = Callable[[FrameStream], Awaitable[None]]

HANDSHAKE_WARNINGS_PER_MINUTE: Final = 20
_BACKLOG: Final = 100  # asyncio's default for start_server


def handshake_failure_reason(exc: BaseException) -> str:
    """A short reason for a failed handshake, from what the loop raised (never a traceback)."""
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason) if exc.reason else str(exc)
    if isinstance(exc, ConnectionResetError) or (isinstance(exc, type) and issubclass(exc, ConnectionResetError)):
        return "the peer closed the connection during the handshake"
    if isinstance(exc, ConnectionAbortedError):
        return str(exc) or "handshake aborted"
    if isinstance(exc, TimeoutError):
        return "no handshake within the timeout"
    return str(exc) or exc.__class__.__name__


class TlsListener:
    """One TLS listener: its listening socket, the accept task, and the handshakes under way."""

    def __init__(
        self,
        source: TlsContextSource,
        connected: Connected,
        *,
        new_stream: Callable[[], FrameStream],
        handshake_timeout_s: float,
        warnings: RateLimitedWarnings,
    ) -> None:
        self.source = source
        self.connected = connected
        self.new_stream = new_stream
        self.handshake_timeout_s = handshake_timeout_s
        self.warnings = warnings
        self.handshakes: set[asyncio.Task[None]] = set()
        self.failed = 0  # handshakes that failed since the listener started (logged or not)
        self.sockets: list[socket.socket] = []
        self._accepting: asyncio.Task[None] | None = None

    async def start(self, host: str | None, port: int) -> None:
        """Bind `host:port` (None or "": every address, IPv6 too where the system has it) and start accepting."""
        if not host and socket.has_dualstack_ipv6():
            sock = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=_BACKLOG)
        else:
            family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
            sock = socket.create_server((host or "", port), family=family, backlog=_BACKLOG)
        sock.setblocking(False)
        self.sockets = [sock]
        self._accepting = asyncio.get_running_loop().create_task(self._accept_loop(sock))

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, peer = await loop.sock_accept(sock)
            except asyncio.CancelledError:
                raise
            except OSError as exc:  # EMFILE and the like: wait a little rather than spin, as asyncio's server does
                log.warning("Accepting a TLS connection failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            task = loop.create_task(self._handshake(conn, peer))
            self.handshakes.add(task)
            task.add_done_callback(self.handshakes.discard)

    async def _handshake(self, conn: socket.socket, peer: tuple[Any, ...]) -> None:
        """Shake hands on a just-accepted socket; serve the connection, or log why the handshake failed."""
        loop = asyncio.get_running_loop()
        stream = self.new_stream()
        try:
            await asyncio.wait_for(
                loop.connect_accepted_socket(
                    lambda: stream,
                    conn,
                    ssl=self.source.server_context,
                    ssl_handshake_timeout=self.handshake_timeout_s,
                ),
                self.handshake_timeout_s + 1,  # the loop's own timeout fires first; this bounds a stuck transport
            )
        except asyncio.CancelledError:
            conn.close()
            raise
        except (OSError, TimeoutError, EOFError, ValueError, RuntimeError) as exc:
            conn.close()
            self.failed += 1
            self.warnings.warning(
                "TLS handshake with %s:%s failed: %s", peer[0], peer[1], handshake_failure_reason(exc)
            )
            return
        stream.task = asyncio.current_task()
        await self.connected(stream)

    def close(self) -> None:
        """Stop accepting; connections already made carry on."""
        if self._accepting is not None:
            self._accepting.cancel()
        for sock in self.sockets:
            sock.close()

    async def wait_closed(self) -> None:
        if self._accepting is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._accepting

    async def serve_forever(self) -> None:
        if self._accepting is not None:
            await self._accepting
