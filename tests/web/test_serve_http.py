"""`kafkalite serve` with its HTTP listener, as a user runs it: the ready line names the console, the listener
answers health checks and metrics, a busy HTTP port is one line and a non-zero exit, `--no-http` has none."""

from __future__ import annotations

import http.cookiejar
import re
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from interop.served import READY, ServedBroker, serve_command

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]
USERS_SET = (sys.executable, "-m", "kafkalite.cli", "users", "set")


def test_ready_line_names_the_console_and_it_answers(tmp_path: Path) -> None:
    broker = ServedBroker(tmp_path / "data", tmp_path / "serve.log", "--fsync", "never", "--http-port", "0")
    try:
        broker.start()
        ready = READY.match(broker.ready_line)
        assert ready is not None
        assert ready["console"] is not None
        assert ready["console"].startswith("http://localhost:")
        url = broker.console_url
        assert url is not None
        with urllib.request.urlopen(url + "readyz", timeout=10) as answer:
            assert answer.read() == b"ready\n"
        with urllib.request.urlopen(url + "metrics", timeout=10) as answer:
            assert b"kafka_server_socketservermetrics_connection_count" in answer.read()
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert b"Local-only console" in answer.read()
        assert broker.stop() == 0
    finally:
        broker.kill()


def test_no_http_serves_no_console(tmp_path: Path) -> None:
    broker = ServedBroker(tmp_path / "data", tmp_path / "serve.log", "--fsync", "never")  # --no-http by default
    try:
        broker.start()
        assert broker.console_url is None
        assert "; console" not in broker.ready_line
    finally:
        broker.kill()


def test_busy_http_port_exits_non_zero_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            serve_command(
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--data-dir",
                "memory",
                "--http-host",
                "127.0.0.1",
                "--http-port",
                str(port),
            ),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if " | " not in line]
    assert len(errors) == 1, done.stderr
    assert f"cannot serve the console on 127.0.0.1:{port}" in errors[0]
    assert "--http-port 0 picks a free port, --no-http turns the console off" in errors[0]
    assert "Traceback" not in done.stderr


def test_help_lists_the_http_options() -> None:
    done = subprocess.run(serve_command("--help"), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    for option in ("--http-port", "--http-host", "--no-http", "--http-tls"):
        assert option in done.stdout


def test_with_the_authorizer_on_the_console_asks_for_a_broker_users_login(tmp_path: Path) -> None:
    data = tmp_path / "data"
    subprocess.run(
        [*USERS_SET, "admin", "--mechanism", "SCRAM-SHA-512", "--password-stdin", "--data-dir", str(data)],
        input="admin-secret\n",
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    authorizer = ("--override", "authorizer.class.name=kafkalite", "--override", "super.users=User:admin")
    broker = ServedBroker(data, tmp_path / "serve.log", "--fsync", "never", "--http-port", "0", *authorizer)
    try:
        broker.start()
        url = broker.console_url
        assert url is not None
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(url + "topics", timeout=10) as answer:
            assert "/login?next=%2Ftopics" in answer.url
            token = re.search(r'name="csrf" value="([^"]+)"', answer.read().decode())
        assert token is not None
        form = {"csrf": token.group(1), "username": "admin", "password": "admin-secret", "next": "/topics"}
        with opener.open(url + "login", urllib.parse.urlencode(form).encode(), timeout=30) as answer:
            assert answer.url == url + "topics"
            assert "Signed in as User:admin" in answer.read().decode()
        with urllib.request.urlopen(url + "metrics", timeout=10) as answer:  # open to Prometheus, no session
            assert answer.status == 200
        assert broker.stop() == 0
    finally:
        broker.kill()


def test_http_tls_without_a_tls_listener_is_one_line_and_a_non_zero_exit() -> None:
    command = serve_command("--port", "0", "--data-dir", "memory", "--http-port", "0", "--http-tls")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "--http-tls uses a TLS listener's ssl.keystore settings, and no listener has them" in done.stderr
    assert "Traceback" not in done.stderr


def _mapped_libraries(pid: int, names: tuple[str, ...]) -> set[str]:
    """Which of `names` (package directories) have a compiled module mapped into process `pid`."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {name for name in names if f"/{name}/" in maps}


def test_the_console_loads_on_its_first_connection_and_answers_it(tmp_path: Path) -> None:
    """The ready line's console address accepts connections at once, but the console's libraries are imported only
    when the first one arrives; that connection is answered, and Kafka clients were served before it."""
    import aiohttp
    import multidict

    compiled = tuple(
        module.__name__
        for module in (aiohttp, multidict)
        if any(Path(module.__file__ or "").parent.glob("*.so"))  # pure-Python installs map nothing to look for
    )
    broker = ServedBroker(tmp_path / "data", tmp_path / "serve.log", "--fsync", "never", "--http-port", "0")
    try:
        broker.start()
        assert broker.process is not None
        assert broker.console_url is not None
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10):
            pass  # the Kafka listener accepts before the console is loaded
        assert _mapped_libraries(broker.process.pid, compiled) == set()
        with urllib.request.urlopen(broker.console_url + "healthz", timeout=30) as answer:
            assert answer.status == 200
        assert _mapped_libraries(broker.process.pid, compiled) == set(compiled)
        assert "Console and /metrics on" in broker.log()
        assert broker.stop() == 0
    finally:
        broker.kill()


def test_a_console_never_connected_to_stops_cleanly(tmp_path: Path) -> None:
    broker = ServedBroker(tmp_path / "data", tmp_path / "serve.log", "--fsync", "never", "--http-port", "0")
    try:
        broker.start()
        assert broker.console_url is not None
        assert broker.stop() == 0
        log = broker.log()
        for trouble in ("Traceback", "Task was destroyed", "Exception ignored", "was never awaited"):
            assert trouble not in log
        assert "Console and /metrics on" not in log  # never loaded
    finally:
        broker.kill()
