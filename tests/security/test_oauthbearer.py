"""OAUTHBEARER with unsecured JWTs (development only): librdkafka's built-in unsecured token logs in and its subject
is the principal ACLs apply to; tokens that are signed, expired, without a subject or for another authzid are
refused; the session ends with the token (KIP-368)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from wire_client import WireClient

from kafkalite.broker import Broker
from kafkalite.server import KafkaServer, run_in_thread
from kafkalite.server.properties import load

pytestmark = pytest.mark.timeout(60)

PROPERTIES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "OAUTHBEARER",
    "connection.failed.authentication.delay.ms": "0",
}


def _b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def token(claims: dict[str, Any], alg: str = "none", signature: str = "") -> str:
    return f"{_b64({'alg': alg})}.{_b64(claims)}.{signature}"


def initial_response(bearer: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {bearer}\x01\x01".encode()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[KafkaServer]:
    settings = load({**PROPERTIES, "log.dirs": str(tmp_path)}, fsync=False)
    async with Broker(config=settings.broker) as broker:
        server = KafkaServer(broker, listeners=settings.listeners, security_settings=settings.security)
        await server.start()
        yield server
        await server.close()


async def login(server: KafkaServer, message: bytes) -> Any:
    client = await WireClient.connect(server.port)
    assert (await client.request(17, 1, mechanism="OAUTHBEARER")).error_code == 0
    answer = await client.request(36, 2, auth_bytes=message)
    await client.close()
    return answer


async def test_an_unsecured_token_logs_in_until_it_expires(server: KafkaServer) -> None:
    now = time.time()
    answer = await login(server, initial_response(token({"sub": "alice", "exp": now + 60, "iat": now}), "alice"))
    assert answer.error_code == 0
    assert 0 < answer.session_lifetime.total_seconds() <= 60


@pytest.mark.parametrize(
    "message",
    [
        initial_response(token({"sub": "alice", "exp": time.time() + 60}, alg="HS256", signature="c2ln")),
        initial_response(token({"sub": "alice", "exp": time.time() - 3600})),
        initial_response(token({"exp": time.time() + 60})),
        initial_response(token({"sub": "alice"})),
        initial_response(token({"sub": "alice", "exp": time.time() + 60, "iat": time.time() + 3600})),
        initial_response(token({"sub": "alice", "exp": time.time() + 60}), authzid="bob"),
        b"n,,\x01auth=Basic abc\x01\x01",
        b"y,,\x01auth=Bearer x.y.\x01\x01",
        b"\xff\xfe",
        b"n,,\x01auth=Bearer not-a-token\x01\x01",
    ],
    ids=[
        "signed-but-alg-not-none",
        "expired",
        "no-subject",
        "no-expiry",
        "issued-in-the-future",
        "authzid-not-the-subject",
        "not-bearer",
        "gs2-header-y",
        "not-utf8",
        "not-a-jwt",
    ],  # named, not shown: the tokens hold the time they were made, which differs between test processes
)
async def test_bad_tokens_are_refused(server: KafkaServer, message: bytes) -> None:
    answer = await login(server, message)
    assert answer.error_code == 58


def test_librdkafka_unsecured_token_and_acls(tmp_path: Path) -> None:
    properties = {**PROPERTIES, "authorizer.class.name": "on", "super.users": "User:admin"}
    with run_in_thread(tmp_path, fsync=False, properties=properties) as server:
        common = {
            "bootstrap.servers": server.bootstrap_of("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "message.timeout.ms": 10000,
        }
        outcomes: dict[str, confluent_kafka.KafkaError | None] = {}
        for user in ("admin", "alice"):
            producer = confluent_kafka.Producer({**common, "sasl.oauthbearer.config": f"principal={user}"})
            producer.produce("oauth", b"v", on_delivery=lambda e, _m, user=user: outcomes.__setitem__(user, e))
            producer.flush(30)
        assert outcomes["admin"] is None
        refused = outcomes["alice"]
        assert refused is not None
        assert refused.code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
