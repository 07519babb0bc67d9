"""A broker served in the test's own event loop on a PLAINTEXT and a SASL_PLAINTEXT listener, with the authorizer on:
the PLAINTEXT listener's principal (ANONYMOUS) is a super user, and alice (PLAIN, password `alice-secret`) gets only
what a test grants her. For raw-bytes tests that speak the wire protocol through `wire_client`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from wire_client import WireClient

from kafkalite.broker import Broker
from kafkalite.security.credentials import CredentialStore
from kafkalite.server import KafkaServer
from kafkalite.server.properties import load

ALICE_PLAIN = b"\0alice\0alice-secret"  # SaslAuthenticate's bytes for alice over PLAIN


@asynccontextmanager
async def authorized_server(data_dir: Path) -> AsyncIterator[KafkaServer]:
    CredentialStore(data_dir, fsync=False).set_password("alice", "PLAIN", "alice-secret")
    settings = load(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data_dir),
            "authorizer.class.name": "on",
            "super.users": "User:ANONYMOUS",  # the PLAINTEXT listener's principal may do everything here
        },
        fsync=False,
    )
    async with Broker(config=settings.broker) as broker:
        server = KafkaServer(broker, listeners=settings.listeners, security_settings=settings.security)
        await server.start()
        try:
            yield server
        finally:
            await server.close()


async def connect(server: KafkaServer, listener: str = "PLAINTEXT") -> WireClient:
    return await WireClient.connect(int(server.bootstrap_of(listener).rsplit(":", 1)[1]))
