"""Failed TLS handshakes and refused logins are logged: one WARNING line each with the peer and the reason (TLS) or
the principal and mechanism (SASL), never a secret, and rate-limited so that a scanner cannot flood the log."""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from certs import Pki, make_pki

from kafkalite.logs import RateLimitedWarnings
from kafkalite.server import ThreadedServer, run_in_thread
from kafkalite.server.tls_accept import HANDSHAKE_WARNINGS_PER_MINUTE

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, -1)


@pytest.fixture
def tls_server(pki: Pki) -> Iterator[ThreadedServer]:
    _, _, server_pem = pki.issue("localhost", server=True)
    properties = {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.location": str(server_pem),
        "ssl.truststore.location": str(pki.ca_file),
        "ssl.client.auth": "required",
    }
    with run_in_thread(properties=properties) as server:
        yield server


def handshake_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("TLS handshake with")]


def wait_for_lines(caplog: pytest.LogCaptureFixture, count: int) -> list[str]:
    deadline = time.monotonic() + 15
    while len(handshake_lines(caplog)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return handshake_lines(caplog)


def send_garbage(server: ThreadedServer, data: bytes) -> int:
    """Send `data` on the TLS port, wait for the server to close; the client's own port."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        port: int = sock.getsockname()[1]
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(4096):
            pass
    return port


def test_a_plaintext_request_on_the_tls_port_is_one_warning_with_peer_and_reason(
    tls_server: ThreadedServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite")
    port = send_garbage(tls_server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert wait_for_lines(caplog, 1) == [f"TLS handshake with 127.0.0.1:{port} failed: HTTP_REQUEST"]
    port = send_garbage(tls_server, API_VERSIONS_V0)  # a Kafka client without TLS configured
    assert wait_for_lines(caplog, 2)[1].startswith(f"TLS handshake with 127.0.0.1:{port} failed: ")
    assert all(r.levelno == logging.WARNING and not r.exc_info for r in caplog.records)


def test_a_client_that_closes_mid_handshake_is_logged(
    tls_server: ThreadedServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite")
    port = send_garbage(tls_server, b"")
    assert wait_for_lines(caplog, 1) == [
        f"TLS handshake with 127.0.0.1:{port} failed: the peer closed the connection during the handshake"
    ]


def test_an_untrusted_client_certificate_is_logged_with_the_verification_failure(
    tls_server: ThreadedServer, pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite")
    stranger = make_pki(tmp_path / "other-ca", "Another CA")
    cert, key, _ = stranger.issue("stranger", server=False)
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    context.load_cert_chain(str(cert), str(key))
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as sock:
        port = sock.getsockname()[1]
        try:  # TLS 1.3: the refusal shows once the client reads
            with context.wrap_socket(sock, server_hostname="localhost") as tls:
                tls.sendall(API_VERSIONS_V0)
                assert tls.recv(1) == b""
        except (ssl.SSLError, ConnectionError):
            pass
    (line,) = wait_for_lines(caplog, 1)
    assert line == f"TLS handshake with 127.0.0.1:{port} failed: CERTIFICATE_VERIFY_FAILED"


def test_a_scanner_cannot_flood_the_log_and_the_listener_keeps_serving(
    tls_server: ThreadedServer, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite")
    for _ in range(HANDSHAKE_WARNINGS_PER_MINUTE + 30):
        send_garbage(tls_server, b"\x16\x03\x01\xff\xff" + b"\0" * 64)
    time.sleep(0.5)
    assert len(handshake_lines(caplog)) == HANDSHAKE_WARNINGS_PER_MINUTE
    client_cert, client_key, _ = pki.issue("client", server=False)
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    context.load_cert_chain(str(client_cert), str(client_key))
    with (
        socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as sock,
        context.wrap_socket(sock, server_hostname="localhost") as tls,
    ):
        tls.sendall(API_VERSIONS_V0)
        assert tls.recv(4)  # answered: the scanner did not take the listener down


def test_rate_limited_warnings_count_what_they_leave_out(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite.test")
    now = [0.0]
    warnings = RateLimitedWarnings(logging.getLogger("kafkalite.test"), burst=2, period_s=10.0, clock=lambda: now[0])
    assert [warnings.warning("event %d", n) for n in range(5)] == [True, True, False, False, False]
    now[0] = 10.0
    assert warnings.warning("event %d", 5)
    assert [r.getMessage() for r in caplog.records] == [
        "event 0",
        "event 1",
        "event 5 (3 more like it not logged in the last 10 s)",
    ]
    assert warnings.suppressed == 0
