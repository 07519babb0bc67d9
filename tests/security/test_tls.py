"""TLS listeners: TLS 1.2+ only, client certificates (required, requested, refused when untrusted or expired), the
certificate subject as principal (ACLs on it), certificates reloaded without a restart, TLS garbage refused."""

from __future__ import annotations

import os
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from certs import Pki, make_pki
from secured_clients import Confluent, Credentials

from kafkalite.errors import InvalidConfigError
from kafkalite.security.tls import RELOAD_CHECK_S
from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, -1)  # size, api_key, version, correlation_id, null client_id


@pytest.fixture
def files(pki: Pki) -> tuple[Path, Path, Path]:
    """(server keystore, client certificate, client key)."""
    _, _, server_pem = pki.issue("localhost", server=True)
    client_cert, client_key, _ = pki.issue("client", server=False)
    return server_pem, client_cert, client_key


def tls_server(pki: Pki, server_pem: Path, client_auth: str, **extra: str) -> Iterator[ThreadedServer]:
    properties = {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.location": str(server_pem),
        "ssl.truststore.location": str(pki.ca_file),
        "ssl.client.auth": client_auth,
        **extra,
    }
    with run_in_thread(properties=properties) as server:
        yield server


def context(pki: Pki, cert: Path | None = None, key: Path | None = None, **versions: ssl.TLSVersion) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca_file))
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key))
    for name, value in versions.items():
        setattr(ctx, name, value)
    return ctx


def handshake(server: ThreadedServer, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    tls = ctx.wrap_socket(sock, server_hostname="localhost")
    # An ApiVersions v0 request: with TLS 1.3 a refused client certificate shows only once the server reads
    tls.sendall(API_VERSIONS_V0)
    return tls


def refused(server: ThreadedServer, ctx: ssl.SSLContext) -> bool:
    try:
        tls = handshake(server, ctx)
        data = tls.recv(1)
    except (ssl.SSLError, ConnectionError, OSError):
        return True
    tls.close()
    return data == b""


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
def test_tls_below_1_2_is_refused(pki: Pki, files: tuple[Path, Path, Path]) -> None:
    server_pem, _, _ = files
    for server in tls_server(pki, server_pem, "none"):
        old = context(pki, maximum_version=ssl.TLSVersion.TLSv1_1, minimum_version=ssl.TLSVersion.TLSv1)
        with pytest.raises((ssl.SSLError, ConnectionError)):
            handshake(server, old)
        tls12 = handshake(server, context(pki, maximum_version=ssl.TLSVersion.TLSv1_2))
        assert tls12.version() == "TLSv1.2"
        tls12.close()


def test_client_auth_required_refuses_missing_untrusted_and_expired_certificates(
    pki: Pki, files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    server_pem, cert, key = files
    expired_cert, expired_key, _ = pki.issue("expired", server=False, valid=False)
    stranger = make_pki(tmp_path / "other-ca", "Another CA")
    stranger_cert, stranger_key, _ = stranger.issue("stranger", server=False)
    for server in tls_server(pki, server_pem, "required"):
        assert refused(server, context(pki))
        assert refused(server, context(pki, expired_cert, expired_key))
        assert refused(server, context(pki, stranger_cert, stranger_key))
        assert not refused(server, context(pki, cert, key))


def test_client_auth_requested_accepts_clients_without_a_certificate(pki: Pki, files: tuple[Path, Path, Path]) -> None:
    server_pem, cert, key = files
    for server in tls_server(pki, server_pem, "requested"):
        assert not refused(server, context(pki))
        assert not refused(server, context(pki, cert, key))


def test_the_certificate_subject_is_the_principal_acls_name(pki: Pki, files: tuple[Path, Path, Path]) -> None:
    server_pem, cert, key = files
    _, _, admin_pem = pki.issue("admin", server=False)
    extra = {"authorizer.class.name": "on", "super.users": "User:CN=admin,O=KafkaLite Tests,C=NL"}
    for server in tls_server(pki, server_pem, "required", **extra):
        admin = Confluent(server.bootstrap, Credentials("SSL", pki.ca_file, cert_file=admin_pem, key_file=admin_pem))
        client = Confluent(server.bootstrap, Credentials("SSL", pki.ca_file, cert_file=cert, key_file=key))
        admin.produce("mtls", [b"by admin"])
        producer = confluent_kafka.Producer({**client.config, "message.timeout.ms": 10000})
        errors: list[confluent_kafka.KafkaError | None] = []
        producer.produce("mtls", b"by client", on_delivery=lambda e, _m, errors=errors: errors.append(e))
        producer.flush(30)
        assert errors[0] is not None
        assert errors[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        acl = confluent_kafka.admin.AclBinding(
            confluent_kafka.admin.ResourceType.TOPIC,
            "mtls",
            confluent_kafka.admin.ResourcePatternType.LITERAL,
            "User:CN=client,O=KafkaLite Tests,C=NL",
            "*",
            confluent_kafka.admin.AclOperation.WRITE,
            confluent_kafka.admin.AclPermissionType.ALLOW,
        )
        admin_client = confluent_kafka.admin.AdminClient(admin.config)
        for future in admin_client.create_acls([acl]).values():
            future.result(30)
        client.produce("mtls", [b"by client"])


def test_certificates_are_reloaded_when_their_files_change(pki: Pki, files: tuple[Path, Path, Path]) -> None:
    server_pem, _, _ = files
    for server in tls_server(pki, server_pem, "none"):
        first = handshake(server, context(pki))
        before = first.getpeercert()["serialNumber"]  # type: ignore[index]
        first.close()
        _, _, renewed = pki.issue("localhost", server=True)
        os.replace(renewed, server_pem)
        time.sleep(RELOAD_CHECK_S + 0.1)
        second = handshake(server, context(pki))
        assert second.getpeercert()["serialNumber"] != before  # type: ignore[index]
        second.close()
        server_pem.write_text("not a certificate")  # a broken rotation keeps the last good certificate
        time.sleep(RELOAD_CHECK_S + 0.1)
        third = handshake(server, context(pki))
        third.close()


def test_tls_garbage_is_refused_and_the_listener_keeps_serving(pki: Pki, files: tuple[Path, Path, Path]) -> None:
    server_pem, _, _ = files
    for server in tls_server(pki, server_pem, "none"):
        for garbage in (b"\x16\x03\x01\xff\xff" + os.urandom(64), b"GET / HTTP/1.1\r\n\r\n", os.urandom(512), b""):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
                raw.sendall(garbage)
                raw.shutdown(socket.SHUT_WR)
                raw.settimeout(10)
                while raw.recv(4096):
                    pass
        healthy = handshake(server, context(pki))
        healthy.close()


def test_a_missing_keystore_is_refused_at_start(pki: Pki, tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError) as failed,
        run_in_thread(
            properties={"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(tmp_path / "missing.pem")}
        ),
    ):
        pass
    assert isinstance(failed.value.__cause__, InvalidConfigError)
    assert "missing.pem" in str(failed.value.__cause__)


def test_broker_settings_are_refused_in_properties() -> None:
    with pytest.raises(RuntimeError) as failed, run_in_thread(properties={"num.partitions": "3"}):
        pass
    assert "broker setting" in str(failed.value.__cause__)
