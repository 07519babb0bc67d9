"""Start a served broker inside this process: for tests and for users' own test suites.

- `serve(broker)`: an async context manager running a `KafkaServer` in front of an already started `Broker` on the
  current event loop (no HTTP listener: add `async with kafkalite.http.HttpServer(broker, port=0)` beside it).
- `run_in_thread(data_dir=None)`: a context manager that starts its own event loop, broker and server in a daemon
  thread and yields a `ThreadedServer` (`.bootstrap` is the `host:port` to give a client). Synchronous clients
  (confluent-kafka, kafka-python, kcat in a subprocess) need the broker to keep running while the test blocks.
  Leaving the block closes server and broker on their own loop, then joins the thread. No console or `/metrics`
  listener starts unless asked (`http_port=0` for a free port; `.http_url` is then its address); with `properties`
  that authenticate, that console asks for a login as `kafkalite serve`'s does.

Both take `properties`, Kafka-named listener and security settings as a `server.properties` holds them, to test
secured clients::

    with run_in_thread(properties={
        "listeners": "SASL_SSL://127.0.0.1:0",
        "ssl.keystore.location": "server.pem",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    }) as server:
        server.bootstrap_of("SASL_SSL")

Without `properties` they serve one PLAINTEXT listener with no authentication, as always; the embedded broker
(`kafkalite.Broker`) never has sockets or authentication.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalite.broker import Broker
from kafkalite.errors import InvalidConfigError
from kafkalite.server.properties import is_server_setting, load
from kafkalite.server.server import KafkaServer

if TYPE_CHECKING:
    from kafkalite.http import HttpServer


def _listener_options(properties: Mapping[str, str] | None) -> dict[str, Any]:
    """KafkaServer options from Kafka-named listener and security settings (only those keys are allowed here: the
    broker's own settings are the broker's)."""
    if properties is None:
        return {}
    broker_keys = sorted(k for k in properties if not is_server_setting(k))
    if broker_keys:
        raise InvalidConfigError(
            f"{broker_keys[0]!r} is a broker setting: pass it as a Broker keyword argument, not in properties"
        )
    settings = load({"log.dirs": "memory", **properties})
    return {
        "listeners": settings.listeners,
        "security_settings": settings.security,
        "max_frame_bytes": settings.max_frame_bytes,
        "settings": settings.server_settings,
    }


@asynccontextmanager
async def serve(
    broker: Broker,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    properties: Mapping[str, str] | None = None,
    **options: Any,
) -> AsyncIterator[KafkaServer]:
    """Serve `broker` on `host:port` (0 = a free port), or on the listeners `properties` name, for the duration of
    the block; `options` go to KafkaServer."""
    server = KafkaServer(broker, host, port, **{**_listener_options(properties), **options})
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@dataclass(frozen=True, slots=True)
class ThreadedServer:
    """A server running on its own loop in a background thread; touch `broker` only through `call`."""

    server: KafkaServer
    broker: Broker
    loop: asyncio.AbstractEventLoop
    http: HttpServer | None = None

    @property
    def http_url(self) -> str:
        """The console's address (`run_in_thread(http_port=...)` only)."""
        if self.http is None:
            raise RuntimeError("no HTTP listener: pass http_port= to run_in_thread")
        return self.http.url

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    @property
    def port(self) -> int:
        return self.server.port

    def bootstrap_of(self, listener_name: str) -> str:
        """`host:port` of one listener (e.g. "SASL_SSL") when several are served."""
        return self.server.bootstrap_of(listener_name)

    def call(self, coroutine: Any, timeout_s: float = 30.0) -> Any:
        """Run a coroutine (e.g. `broker.create_topic(...)`) on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)


@contextmanager
def run_in_thread(
    data_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    startup_timeout_s: float = 30.0,
    properties: Mapping[str, str] | None = None,
    server_options: dict[str, Any] | None = None,
    http_port: int | None = None,
    **broker_settings: Any,
) -> Iterator[ThreadedServer]:
    """A broker (`Broker(data_dir, **broker_settings)`) served on `host:port`, or on the listeners `properties`
    name, from a background thread; with `http_port` (0 = a free one) also the console and `/metrics` on `host`."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    stop = asyncio.Event()
    handle: list[ThreadedServer] = []
    failure: list[BaseException] = []

    async def main() -> None:
        try:
            async with (
                Broker(data_dir, **broker_settings) as broker,
                serve(broker, host, port, properties=properties, **(server_options or {})) as server,
            ):
                if http_port is None:
                    handle.append(ThreadedServer(server, broker, loop))
                    started.set()
                    await stop.wait()
                    return
                from kafkalite.http import HttpServer

                async with HttpServer(
                    broker,
                    host,
                    http_port,
                    listeners=[f"kafka://{server.bootstrap}"],
                    security=server.security,
                    kafka_protocols=[listener.protocol for listener, _ in server.listeners],
                ) as http:
                    handle.append(ThreadedServer(server, broker, loop, http))
                    started.set()
                    await stop.wait()
        except BaseException as e:
            failure.append(e)
            started.set()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), name="kafkalite-server", daemon=True)
    thread.start()
    if not started.wait(startup_timeout_s) or failure:
        raise RuntimeError("the in-thread KafkaLite server did not start") from (failure[0] if failure else None)
    try:
        yield handle[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(startup_timeout_s)
        if not thread.is_alive():
            loop.close()
