"""`OnDemandConsole`, in process on a real broker and real sockets: the address is bound at once, the console loads
on the first connection and answers it, a console being loaded stops cleanly, and a console that cannot load logs why,
closes its address and leaves the broker serving. `listen.bind`: one port for every address of a host."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from pathlib import Path

import pytest

from kafkalite.broker import Broker
from kafkalite.http.listen import bind, console_url
from kafkalite.http.on_demand import OnDemandConsole
from kafkalite.security.settings import TlsSettings


async def _get(port: int, path: str, timeout_s: float = 30.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout_s)
    finally:
        writer.close()


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


async def test_loads_on_the_first_connection_and_answers_it() -> None:
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0)
        assert console.url == f"http://localhost:{console.port}/"
        console.watch()
        try:
            assert console.server is None
            answer = await _get(console.port, "/healthz")
            assert answer.startswith(b"HTTP/1.1 200"), answer
            assert console.server is not None
            console.kafka_ready = False  # reaches the loaded console
            answer = await _get(console.port, "/readyz")
            assert answer.startswith(b"HTTP/1.1 503"), answer
        finally:
            await console.close()
        assert console.server is None
        assert _refused(console.port)


async def test_kafka_ready_set_before_the_load_is_what_readyz_says() -> None:
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0)
        console.kafka_ready = False
        console.watch()
        try:
            answer = await _get(console.port, "/readyz")
            assert answer.startswith(b"HTTP/1.1 503"), answer
        finally:
            await console.close()


async def test_closed_before_any_connection_closes_its_address() -> None:
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0)
        console.watch()
        await console.close()
        assert console.server is None
        assert _refused(console.port)


async def test_closed_while_loading_stops_the_load() -> None:
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0)
        console.watch()
        _, writer = await asyncio.open_connection("127.0.0.1", console.port)
        for _ in range(100):  # until the loop has seen the connection and started loading
            await asyncio.sleep(0)
            if console._loading is not None:
                break
        assert console._loading is not None
        await console.close()
        assert console._loading.done()
        assert console.server is None
        assert _refused(console.port)
        writer.close()


async def test_a_console_that_cannot_load_closes_its_address_and_the_broker_serves_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = TlsSettings(keystore_location=str(tmp_path / "no-such-keystore.pem"))
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0, tls=missing)
        assert console.url.startswith("https://localhost:")
        console.watch()
        with caplog.at_level(logging.ERROR, logger="kafkalite.http.on_demand"):
            _, writer = await asyncio.open_connection("127.0.0.1", console.port)
            for _ in range(300):
                await asyncio.sleep(0.05)
                if console._loading is not None and console._loading.done():
                    break
        writer.close()
        assert console.server is None
        assert "The console could not start" in caplog.text
        assert _refused(console.port)
        await broker.create_topic("still-served", 1)
        assert "still-served" in broker.topics
        await console.close()


def test_bind_puts_every_address_of_a_host_on_one_port() -> None:
    sockets = bind("localhost", 0)
    try:
        ports = {sock.getsockname()[1] for sock in sockets}
        assert len(ports) == 1
        families = {sock.family for sock in sockets}
        expected = {info[0] for info in socket.getaddrinfo("localhost", 0, type=socket.SOCK_STREAM)}
        assert families == expected
    finally:
        for sock in sockets:
            sock.close()


def test_bind_of_a_busy_port_raises_and_leaves_nothing_open() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError) as raised:
            bind("127.0.0.1", port)
        assert raised.value.errno == errno.EADDRINUSE


def test_console_url_names_loopback_and_wildcards_localhost() -> None:
    assert console_url("0.0.0.0", 9644, False) == "http://localhost:9644/"
    assert console_url("::1", 9644, True) == "https://localhost:9644/"
    assert console_url("10.0.0.7", 80, False) == "http://10.0.0.7:80/"
