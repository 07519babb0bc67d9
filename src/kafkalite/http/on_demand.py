"""The console of `kafkalite serve`, bound at start and loaded when its first connection arrives.

The console's libraries (aiohttp, prometheus-client, and Jinja for its pages) were about a third of a start of
`serve` and 15 MB of an idle broker's memory, and a broker started for a test, a notebook or a service's local run
usually never shows a page. So `serve` binds the console's address before it prints its ready line (the URL there
accepts connections at once, and a busy port or a bad `--http-tls` keystore is still a start-up error), and imports the
console when the first connection arrives: in a worker thread, so the Kafka listeners go on serving meanwhile (the
console's own set-up then runs on the loop). That first connection waits in the listen backlog until the console
serves it (about 0.4 s here); nothing is refused. Where the event loop cannot watch a socket (`add_reader`), the
console is loaded at once.

    console = OnDemandConsole(broker, "localhost", 9644, listeners=[...])   # binds; raises OSError
    console.watch()                                   # on the broker's running event loop
    print(console.url)
    ...
    await console.close()

If the console cannot load, the error is logged, its address is closed, and the Kafka listeners go on serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkalite.http.listen import bind, console_tls, console_url

if TYPE_CHECKING:
    from kafkalite.broker import Broker
    from kafkalite.http.server import HttpServer
    from kafkalite.security.service import Security
    from kafkalite.security.settings import SecurityProtocol, TlsSettings

logger = logging.getLogger(__name__)


class OnDemandConsole:
    """`HttpServer`'s arguments, bound now and served from the first connection on (module docstring)."""

    def __init__(
        self,
        broker: Broker,
        host: str,
        port: int,
        *,
        listeners: Sequence[str] = (),
        security: Security | None = None,
        kafka_protocols: Sequence[SecurityProtocol] = (),
        tls: TlsSettings | None = None,
    ) -> None:
        self._broker = broker
        self._host = host
        self._listeners = listeners
        self._security = security
        self._kafka_protocols = kafka_protocols
        # Read now: a bad keystore is a start-up error, as it was when the console started at once.
        self._tls = None if tls is None else console_tls(tls)
        self._sockets = bind(host, port)
        self.port: int = self._sockets[0].getsockname()[1]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watching = False
        self._loading: asyncio.Task[None] | None = None
        self._kafka_ready = True
        self.server: HttpServer | None = None  # once loaded

    @property
    def url(self) -> str:
        return console_url(self._host, self.port, self._tls is not None)

    @property
    def kafka_ready(self) -> bool:
        """What `/readyz` says once loaded (False from the first moment of a shutdown)."""
        return self._kafka_ready

    @kafka_ready.setter
    def kafka_ready(self, ready: bool) -> None:
        self._kafka_ready = ready
        if self.server is not None:
            self.server.kafka_ready = ready

    def watch(self) -> None:
        """Load the console when a connection arrives on any of its addresses; call on the running loop."""
        self._loop = asyncio.get_running_loop()
        try:
            for sock in self._sockets:
                self._loop.add_reader(sock.fileno(), self._connection_arrived)
        except NotImplementedError:  # a loop that cannot watch sockets (Windows' proactor): load now
            self._watching = True
            self._connection_arrived()
            return
        self._watching = True

    def _connection_arrived(self) -> None:
        self._unwatch()
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._load(), name="console-load")

    def _unwatch(self) -> None:
        if self._watching and self._loop is not None:
            self._watching = False
            for sock in self._sockets:
                with contextlib.suppress(NotImplementedError):
                    self._loop.remove_reader(sock.fileno())

    async def _load(self) -> None:
        try:
            # The import is the slow part (about 0.3 s of CPU); in a thread the event loop keeps serving Kafka.
            await asyncio.to_thread(importlib.import_module, "kafkalite.http.server")
            from kafkalite.http.server import HttpServer

            server = HttpServer(
                self._broker,
                self._host,
                self.port,
                listeners=self._listeners,
                security=self._security,
                kafka_protocols=self._kafka_protocols,
                tls_source=self._tls,
                sockets=self._sockets,
            )
            server.kafka_ready = self._kafka_ready
            await server.start()
        except Exception:
            logger.exception("The console could not start; %s is closed, the Kafka listeners go on", self.url)
            self._close_sockets()
            return
        server.kafka_ready = self._kafka_ready  # a shutdown may have begun while it started
        self.server = server

    def _close_sockets(self) -> None:
        for sock in self._sockets:
            sock.close()

    async def close(self) -> None:
        """Stop listening; a console being loaded is stopped, a loaded one closed."""
        self._unwatch()
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            try:
                await self._loading
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
        if self.server is not None:
            await self.server.close()
            self.server = None
        self._close_sockets()
