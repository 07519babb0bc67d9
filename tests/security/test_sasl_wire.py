"""SASL on the wire: both framings, refusals without hints, the state rules, KIP-368 session expiry, the cap on
unauthenticated frames, and connection limits."""

from __future__ import annotations

import asyncio
import datetime
import logging
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import scramp
from wire_client import WireClient

from kafkalite.broker import Broker
from kafkalite.security.credentials import CredentialStore
from kafkalite.server import KafkaServer, serve
from kafkalite.server.properties import load

pytestmark = pytest.mark.timeout(60)

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
REFUSAL = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"

Connect = Callable[[], Awaitable[WireClient]]


async def started(tmp_path: Path, **extra: str) -> tuple[Broker, KafkaServer]:
    store = CredentialStore(tmp_path, fsync=False)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"):
        store.set_password("alice", mechanism, "alice-secret")
        store.set_password("bob", mechanism, "bob-secret")
    settings = load(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path),
            "connection.failed.authentication.delay.ms": "200",
            **extra,
        },
        fsync=False,
    )
    broker = Broker(config=settings.broker)
    await broker.start()
    server = KafkaServer(broker, listeners=settings.listeners, security_settings=settings.security)
    await server.start()
    return broker, server


@pytest.fixture
async def sasl(tmp_path: Path) -> AsyncIterator[KafkaServer]:
    broker, server = await started(tmp_path)
    yield server
    await server.close()
    await broker.close()


@pytest.fixture
async def connect(sasl: KafkaServer) -> AsyncIterator[Connect]:
    clients: list[WireClient] = []

    async def open_client() -> WireClient:
        clients.append(await WireClient.connect(sasl.port))
        return clients[-1]

    yield open_client
    for client in clients:
        await client.close()


async def test_kip152_scram_then_requests_are_served(connect: Connect) -> None:
    client = await connect()
    versions = await client.request(18, 3, client_software_name="t", client_software_version="1")
    assert versions.error_code == 0
    final = await client.scram_login("alice", "alice-secret")
    assert final.error_code == 0
    assert (await client.metadata()).brokers


async def test_legacy_framing_plain_and_scram(connect: Connect) -> None:
    plain = await connect()
    handshake = await plain.request(17, 0, mechanism="PLAIN")
    assert handshake.error_code == 0
    assert set(handshake.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert await plain.token(b"\0alice\0alice-secret") == b""
    assert (await plain.metadata()).brokers

    scram = await connect()
    assert (await scram.request(17, 0, mechanism="SCRAM-SHA-256")).error_code == 0
    client = scramp.ScramClient(["SCRAM-SHA-256"], "bob", "bob-secret")
    client.set_server_first((await scram.token(client.get_client_first().encode())).decode())
    client.set_server_final((await scram.token(client.get_client_final().encode())).decode())
    assert (await scram.metadata()).brokers


async def test_legacy_framing_refusal_closes_without_an_answer(connect: Connect) -> None:
    client = await connect()
    assert (await client.request(17, 0, mechanism="PLAIN")).error_code == 0
    await client.send_raw(struct.pack(">i", 19) + b"\0alice\0wrong-secret")
    assert await client.is_closed_by_server()


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
async def test_refusals_give_no_hint_wait_and_close(
    connect: Connect, caplog: pytest.LogCaptureFixture, user: str, password: str, mechanism: str
) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite")
    client = await connect()
    began = time.monotonic()
    if mechanism == "PLAIN":
        assert (await client.request(17, 1, mechanism="PLAIN")).error_code == 0
        answer = await client.request(36, 2, auth_bytes=f"\0{user}\0{password}".encode())
    else:
        answer = await client.scram_login(user, password, mechanism)
    assert time.monotonic() - began >= 0.2  # connection.failed.authentication.delay.ms
    assert answer.error_code == SASL_AUTHENTICATION_FAILED
    assert answer.error_message == REFUSAL.format(mechanism)
    assert await client.is_closed_by_server()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Failed SASL authentication")]
    assert len(lines) == 1
    assert lines[0].startswith("Failed SASL authentication from 127.0.0.1:")
    assert lines[0].endswith(f": principal User:{user}, mechanism {mechanism}")
    assert password not in lines[0]


async def test_requests_before_authentication_close_the_connection(connect: Connect) -> None:
    client = await connect()
    await client.send_raw(
        client.encode(3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    )
    assert await client.is_closed_by_server()


async def test_unsupported_mechanism_and_illegal_states(connect: Connect) -> None:
    client = await connect()
    refused = await client.request(17, 1, mechanism="GSSAPI")
    assert refused.error_code == UNSUPPORTED_SASL_MECHANISM
    assert "SCRAM-SHA-512" in refused.mechanisms
    early = await client.request(36, 2, auth_bytes=b"n,,n=alice,r=abc")
    assert early.error_code == ILLEGAL_SASL_STATE
    assert await client.is_closed_by_server()


async def test_unauthenticated_frames_are_capped(tmp_path: Path) -> None:
    broker, server = await started(tmp_path, **{"sasl.server.max.receive.size": "1024"})
    try:
        client = await WireClient.connect(server.port)
        await client.send_raw(struct.pack(">i", 4096) + b"\0" * 64)
        assert await client.is_closed_by_server()
        authenticated = await WireClient.connect(server.port)
        assert (await authenticated.scram_login("alice", "alice-secret")).error_code == 0
        topic = authenticated.nested(3, 12, "MetadataRequestTopic", name="x" * 2000, topic_id=None)
        big = await authenticated.request(
            3, 12, topics=[topic], allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )
        assert big.topics[0].name == "x" * 2000  # the cap is lifted once authenticated
        await client.close()
        await authenticated.close()
    finally:
        await server.close()
        await broker.close()


async def test_sessions_expire_and_reauthenticate_as_the_same_user(tmp_path: Path) -> None:
    broker, server = await started(tmp_path, **{"connections.max.reauth.ms": "600"})
    try:
        client = await WireClient.connect(server.port)
        final = await client.scram_login("alice", "alice-secret")
        assert datetime.timedelta(0) < final.session_lifetime <= datetime.timedelta(milliseconds=600)
        assert (await client.scram_login("alice", "alice-secret")).error_code == 0  # re-authentication (KIP-368)
        other = await client.scram_login("bob", "bob-secret")
        assert other.error_code == SASL_AUTHENTICATION_FAILED  # a session may not change its principal
        assert await client.is_closed_by_server()

        expiring = await WireClient.connect(server.port)
        assert (await expiring.scram_login("alice", "alice-secret")).error_code == 0
        await asyncio.sleep(0.7)
        await expiring.send_raw(
            expiring.encode(
                3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
            )
        )
        assert await expiring.is_closed_by_server()
        await client.close()
        await expiring.close()
    finally:
        await server.close()
        await broker.close()


async def test_connection_limits_and_idle_timeout(tmp_path: Path) -> None:
    broker, server = await started(tmp_path, **{"max.connections.per.ip": "2", "connections.max.idle.ms": "300"})
    try:
        first, second = await WireClient.connect(server.port), await WireClient.connect(server.port)
        await asyncio.sleep(0.05)
        third = await WireClient.connect(server.port)
        assert await third.is_closed_by_server()
        assert await first.is_closed_by_server()  # idle past connections.max.idle.ms
        assert await second.is_closed_by_server()
        fourth = await WireClient.connect(server.port)  # the slots are free again
        assert (await fourth.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0
        for client in (first, second, third, fourth):
            await client.close()
    finally:
        await server.close()
        await broker.close()


async def test_embedded_style_serve_is_unchanged(tmp_path: Path) -> None:
    """`serve(broker)` without listeners is one PLAINTEXT listener with no authentication, as before."""
    async with Broker(data_dir=None) as broker, serve(broker) as server:
        client = await WireClient.connect(server.port)
        assert (await client.metadata()).brokers
        await client.close()
