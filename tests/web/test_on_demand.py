"""`OnDemandConsole`, in process on a real broker and real sockets: the address is bound at once, the console loads
on the first connection and answers it, a console being loaded stops cleanly, and a console that cannot load logs why,
closes its address and leaves the broker serving. `listen.bind`: one port for every address of a host.

Where a test needs the console's import to be slow or to fail, it replaces `importlib` as `on_demand` sees it (the
standard library's import, never a KafkaLite component)."""

from __future__ import annotations

import asyncio
import errno
import importlib
import logging
import os
import socket
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from kafkalite.broker import Broker
from kafkalite.errors import InvalidConfigError
from kafkalite.http import listen, on_demand
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


def _import_through(monkeypatch: pytest.MonkeyPatch, import_module: Any) -> None:
    monkeypatch.setattr(on_demand, "importlib", types.SimpleNamespace(import_module=import_module))


async def test_closed_while_loading_cancels_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_import(name: str) -> types.ModuleType:
        entered.set()
        release.wait(30)
        return importlib.import_module(name)

    _import_through(monkeypatch, slow_import)
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0)
        console.watch()
        _, writer = await asyncio.open_connection("127.0.0.1", console.port)
        try:
            assert await asyncio.to_thread(entered.wait, 30)  # the load is inside the import
            assert console._loading is not None
            await console.close()
            assert console._loading.cancelled()
            assert console.server is None
            assert _refused(console.port)
        finally:
            release.set()
            writer.close()


async def test_a_console_that_cannot_load_closes_its_address_and_the_broker_serves_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_install(name: str) -> types.ModuleType:
        raise ModuleNotFoundError(f"No module named {name!r} (a broken install)")

    _import_through(monkeypatch, broken_install)
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0)
        console.watch()
        with caplog.at_level(logging.ERROR, logger="kafkalite.http.on_demand"):
            reader, writer = await asyncio.open_connection("127.0.0.1", console.port)
            try:  # closed unanswered (reset, as it was never accepted), not left hanging
                assert await asyncio.wait_for(reader.read(), 30) == b""
            except ConnectionResetError:
                pass
            writer.close()
        assert console._loading is not None
        await console._loading
        assert console.server is None
        assert "The console could not start" in caplog.text
        assert "a broken install" in caplog.text
        assert _refused(console.port)
        await broker.create_topic("still-served", 1)
        assert "still-served" in broker.topics
        await console.close()


async def test_a_bad_tls_keystore_is_an_error_before_anything_is_bound(tmp_path: Path) -> None:
    missing = TlsSettings(keystore_location=str(tmp_path / "no-such-keystore.pem"))
    before = set(os.listdir("/proc/self/fd"))
    async with Broker() as broker:
        with pytest.raises(InvalidConfigError, match=r"no-such-keystore\.pem"):
            OnDemandConsole(broker, "127.0.0.1", 0, tls=missing)
    assert set(os.listdir("/proc/self/fd")) <= before


def _two_loopback_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    """`getaddrinfo` of any host gives 127.0.0.1 and 127.0.0.2 (both loopback on Linux), as a dual-stack name would."""

    def resolve(host: str | None, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))
            for address in ("127.0.0.1", "127.0.0.2")
        ]

    monkeypatch.setattr(listen.socket, "getaddrinfo", resolve)


def test_bind_puts_every_address_of_a_host_on_one_port(monkeypatch: pytest.MonkeyPatch) -> None:
    _two_loopback_addresses(monkeypatch)
    sockets = bind("both", 0)
    try:
        assert [sock.getsockname()[0] for sock in sockets] == ["127.0.0.1", "127.0.0.2"]
        assert len({sock.getsockname()[1] for sock in sockets}) == 1
        assert all(sock.getblocking() is False for sock in sockets)
    finally:
        for sock in sockets:
            sock.close()


def test_bind_of_a_port_busy_on_one_address_raises_and_leaves_nothing_open(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.2", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _two_loopback_addresses(monkeypatch)
        before = set(os.listdir("/proc/self/fd"))
        with pytest.raises(OSError) as raised:
            bind("both", port)  # 127.0.0.1 binds, then 127.0.0.2 is taken
        assert raised.value.errno == errno.EADDRINUSE
        assert set(os.listdir("/proc/self/fd")) <= before


def test_console_url_names_loopback_and_wildcards_localhost() -> None:
    assert console_url("0.0.0.0", 9644, False) == "http://localhost:9644/"
    assert console_url("::1", 9644, True) == "https://localhost:9644/"
    assert console_url("10.0.0.7", 80, False) == "http://10.0.0.7:80/"
    assert console_url("fd00::7", 80, False) == "http://[fd00::7]:80/"


async def test_over_https_the_first_connection_loads_the_console_and_is_answered(tmp_path: Path) -> None:
    """`--http-tls`: the keystore is read at construction, the TLS handshake of the first connection waits for the
    load, and the console answers over HTTPS on the sockets bound before."""
    import ssl

    from security.certs import make_pki  # the security tests' own PKI (tests/security/certs.py)

    pki = make_pki(tmp_path / "pki")
    _, _, keystore = pki.issue("localhost", server=True)
    trust = ssl.create_default_context(cafile=str(pki.ca_file))
    async with Broker() as broker:
        console = OnDemandConsole(broker, "127.0.0.1", 0, tls=TlsSettings(str(keystore)))
        assert console.url == f"https://localhost:{console.port}/"
        console.watch()
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", console.port, ssl=trust, server_hostname="localhost"
            )
            request = f"GET /healthz HTTP/1.1\r\nHost: localhost:{console.port}\r\nConnection: close\r\n\r\n"
            writer.write(request.encode())
            answer = await asyncio.wait_for(reader.read(), 30)
            writer.close()
            assert answer.startswith(b"HTTP/1.1 200"), answer
            assert console.server is not None
        finally:
            await console.close()
