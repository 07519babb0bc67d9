"""The console with the broker's security on, through aiohttp's test client over a real socket: login against the
broker's SCRAM and PLAIN credentials, the session cookie, the failed-login limit, logout, and every page and write
acting as the logged-in principal under the broker's ACLs (hidden when not DESCRIBE-able, 403 when not allowed)."""

from __future__ import annotations

import asyncio
import html
import re
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from kafkalite.broker import Broker
from kafkalite.http.auth import COOKIE, MAX_FAILURES, Logins, needs_login, safe_next
from kafkalite.http.server import HttpServer, build_app
from kafkalite.security.acls import Operation, PatternType, Permission, ResourceType, binding
from kafkalite.security.service import Security
from kafkalite.security.settings import ClientAuth, SecurityProtocol, SecuritySettings, TlsSettings

TOKEN = re.compile(r'name="csrf" value="([^"]+)"')
SETTINGS = SecuritySettings(
    authorizer_enabled=True, super_users=frozenset({"User:admin"}), failed_authentication_delay_ms=0
)


@dataclass
class Console:
    broker: Broker
    security: Security
    client: TestClient[Any, Any]

    async def token(self, path: str = "/login") -> str:
        answer = await self.client.get(path)
        match = TOKEN.search(await answer.text())
        assert match, f"no form token in {path}"
        return match.group(1)

    async def login(self, user: str, password: str) -> int:
        form = {"csrf": await self.token(), "username": user, "password": password, "next": "/topics"}
        answer = await self.client.post("/login", data=form, allow_redirects=False)
        return answer.status

    async def post(self, path: str, data: dict[str, str]) -> tuple[int, str]:
        form = {"csrf": await self.token("/topics"), **data}
        answer = await self.client.post(path, data=form)
        return answer.status, html.unescape(await answer.text())


@pytest.fixture
async def console() -> AsyncIterator[Console]:
    async with Broker() as broker:
        security = Security(SETTINGS, None)
        for user, mechanism in (("alice", "SCRAM-SHA-512"), ("admin", "SCRAM-SHA-256"), ("bob", "PLAIN")):
            security.credentials.set_password(user, mechanism, f"{user}-secret")
        security.acls.add(
            [
                binding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", op, Permission.ALLOW)
                for op in (Operation.READ, Operation.WRITE)
            ]
            + [
                binding(ResourceType.GROUP, "readers", PatternType.LITERAL, "User:alice", "*", Operation.READ, 3),
                binding(ResourceType.TOPIC, "audit", PatternType.LITERAL, "User:bob", "*", Operation.ALL, 3),
            ]
        )
        await broker.create_topic("orders", 2)
        await broker.create_topic("payments", 1)
        await broker.create_topic("audit", 1)
        logins = Logins(security)
        app = build_app(broker, HttpServer(broker, "127.0.0.1", 0).guard, logins=logins)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            yield Console(broker, security, client)


def test_login_is_needed_exactly_when_the_broker_authenticates() -> None:
    security = Security(SecuritySettings(), None)
    assert not needs_login(None, [SecurityProtocol.SASL_SSL])
    assert not needs_login(security, [SecurityProtocol.PLAINTEXT, SecurityProtocol.SSL])
    assert needs_login(security, [SecurityProtocol.PLAINTEXT, SecurityProtocol.SASL_PLAINTEXT])
    assert needs_login(Security(SecuritySettings(authorizer_enabled=True), None), [SecurityProtocol.PLAINTEXT])


def test_next_is_a_local_path_only() -> None:
    assert safe_next("/topics/orders?x=1") == "/topics/orders?x=1"
    for hostile in ("//evil.example/", "https://evil.example/", "evil", "/\\evil.example", "", None):
        assert safe_next(hostile) == "/"


async def test_every_page_and_api_sends_a_stranger_to_the_login(console: Console) -> None:
    for path in ("/", "/topics", "/topics/orders", "/topics/orders/messages", "/groups", "/groups/g", "/dead-letters"):
        answer = await console.client.get(path, allow_redirects=False)
        assert answer.status == 303, path
        assert answer.headers["Location"].startswith("/login?next=")
    assert (await console.client.get("/api/overview")).status == 401
    for path in ("/topics", "/topics/orders/delete", "/topics/orders/configs", "/groups/g/reset", "/logout"):
        assert (await console.client.post(path, data={"name": "x"})).status == 401, path
    assert "orders" in console.broker.topics
    for path in ("/healthz", "/readyz", "/metrics", "/login", "/static/console.css"):
        assert (await console.client.get(path)).status == 200, path


async def test_scram_and_plain_passwords_log_in_and_wrong_ones_do_not(console: Console) -> None:
    assert await console.login("alice", "wrong") == 401
    assert await console.login("nobody", "alice-secret") == 401
    assert await console.login("", "") == 401
    assert not console.client.session.cookie_jar.filter_cookies(console.client.make_url("/"))
    assert await console.login("bob", "bob-secret") == 303  # PLAIN
    assert await console.login("alice", "alice-secret") == 303  # SCRAM-SHA-512
    page = await (await console.client.get("/topics")).text()
    assert "Signed in as User:alice" in page


async def test_the_cookie_is_httponly_samesite_strict_and_random(console: Console) -> None:
    form = {"csrf": await console.token(), "username": "alice", "password": "alice-secret", "next": "//evil/"}
    answer = await console.client.post("/login", data=form, allow_redirects=False)
    assert answer.headers["Location"] == "/"
    cookie = answer.cookies[COOKIE]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Strict"
    assert cookie["path"] == "/"
    assert not cookie["secure"]  # served over plain HTTP here
    assert len(cookie.value) >= 40
    again = await console.client.post("/login", data={**form, "csrf": await console.token()}, allow_redirects=False)
    assert again.cookies[COOKIE].value != cookie.value  # a new login is a new session, never the old token


async def test_a_login_needs_the_form_token(console: Console) -> None:
    answer = await console.client.post("/login", data={"username": "alice", "password": "alice-secret"})
    assert answer.status == 403
    cross = await console.client.post(
        "/login",
        data={"csrf": await console.token(), "username": "alice", "password": "alice-secret"},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert cross.status == 403


async def test_failed_logins_are_limited_per_address_and_user(console: Console) -> None:
    for _ in range(MAX_FAILURES):
        assert await console.login("alice", "guess") == 401
    form = {"csrf": await console.token(), "username": "alice", "password": "alice-secret"}
    limited = await console.client.post("/login", data=form, allow_redirects=False)
    assert limited.status == 429  # the right password too, until the window moves on
    assert int(limited.headers["Retry-After"]) > 0
    assert "Too many failed logins" in await limited.text()


def test_the_limiter_forgets_after_its_window_and_keys_are_separate() -> None:
    logins = Logins(Security(SETTINGS, None))
    for i in range(MAX_FAILURES):
        logins.attempt(["address:1", "user:a"], now=100.0 + i)
    assert logins.blocked_for(["user:a"], now=110.0) > 0
    assert logins.blocked_for(["user:b", "address:2"], now=110.0) == 0
    assert logins.blocked_for(["user:a"], now=100.0 + 301 + MAX_FAILURES) == 0
    for i in range(MAX_FAILURES * 2):  # successful logins take their attempt back
        logins.succeeded(["address:3"], logins.attempt(["address:3"], now=1000.0 + i))
    assert logins.blocked_for(["address:3"], now=1100.0) == 0


async def test_parallel_guesses_count_before_their_passwords_are_checked(console: Console) -> None:
    token = await console.token()
    form = {"csrf": token, "username": "alice", "password": "guess"}
    answers = await asyncio.gather(
        *(console.client.post("/login", data=form, allow_redirects=False) for _ in range(MAX_FAILURES * 3))
    )
    statuses = sorted(answer.status for answer in answers)
    assert statuses.count(401) == MAX_FAILURES
    assert statuses.count(429) == MAX_FAILURES * 2


async def test_logout_ends_the_session_on_the_server(console: Console) -> None:
    assert await console.login("alice", "alice-secret") == 303
    token = console.client.session.cookie_jar.filter_cookies(console.client.make_url("/"))[COOKIE].value
    status, _ = await console.post("/logout", {})
    assert status == 200  # the login page, after the redirect
    assert (await console.client.get("/topics", allow_redirects=False)).status == 303
    replayed = await console.client.get("/topics", allow_redirects=False, cookies={COOKIE: token})
    assert replayed.status == 303  # the old token is dead server side, not just forgotten by the browser


async def test_sessions_expire_and_end_when_the_password_changes(console: Console) -> None:
    logins = Logins(console.security, idle_s=60, lifetime_s=3600)
    token = logins.start("alice", now=1000.0)
    assert logins.session(token, now=1059.0) is not None
    assert logins.session(token, now=1200.0) is None  # idle too long
    token = logins.start("alice", now=1000.0)
    for now in range(1050, 4600, 50):
        assert logins.session(token, now=float(now)) is not None
    assert logins.session(token, now=4650.0) is None  # past its lifetime however busy
    token = logins.start("alice", now=0.0)
    console.security.credentials.set_password("alice", "SCRAM-SHA-512", "new-secret")
    assert logins.session(token, now=1.0) is None
    token = logins.start("bob", now=0.0)
    console.security.credentials.delete("bob")
    assert logins.session(token, now=1.0) is None


async def test_pages_show_only_what_the_principal_may_describe(console: Console) -> None:
    await console.broker.groups.commit_offsets(
        "readers", "", -1, [("orders", 0, 0, "", -1), ("payments", 0, 0, "", -1)]
    )
    await console.broker.groups.commit_offsets("others", "", -1, [("orders", 0, 0, "", -1)])
    await console.broker.create_topic("orders.DLQ", 1)
    await console.broker.create_topic("payments.DLQ", 1)
    assert await console.login("alice", "alice-secret") == 303
    topics = await (await console.client.get("/topics")).text()
    assert "/topics/orders" in topics
    assert "payments" not in topics
    assert "audit" not in topics
    groups = await (await console.client.get("/groups")).text()
    assert "readers" in groups
    assert "others" not in groups
    group = await (await console.client.get("/groups/readers")).text()
    assert "orders" in group
    assert "payments" not in group
    assert (await console.client.get("/groups/others")).status == 403
    dead = await (await console.client.get("/dead-letters")).text()
    assert "payments" not in dead
    for path in ("/topics/payments", "/topics/payments/messages", "/topics/missing", "/dead-letters/payments"):
        answer = await console.client.get(path)
        assert answer.status == 403, path  # refused before the lookup: a refusal never tells what exists
        assert "User:alice is not allowed" in html.unescape(await answer.text())
    overview = await (await console.client.get("/")).text()
    assert "not allowed DESCRIBE on the cluster" in overview
    totals = await (await console.client.get("/api/overview")).json()
    assert (totals["topics"], totals["partitions"], totals["connections"]) == (1, 2, None)
    own = await (await console.client.get("/topics/orders")).text()
    assert "not allowed DESCRIBE_CONFIGS" in own
    assert (await console.client.get("/topics/orders/messages")).status == 200


@pytest.mark.parametrize(
    ("path", "form", "operation"),
    [
        ("/topics", {"name": "new-topic", "partitions": "1"}, "CREATE on the cluster or on topic 'new-topic'"),
        ("/topics/orders/delete", {"confirm": "orders"}, "DELETE on topic 'orders'"),
        ("/topics/orders/configs", {"cfg:retention.ms": "1000"}, "ALTER_CONFIGS on topic 'orders'"),
        ("/topics/payments/messages", {"value": "x"}, "WRITE on topic 'payments'"),
        ("/groups/others/reset", {"topic": "orders", "to": "earliest"}, "READ on group 'others'"),
        ("/groups/readers/reset", {"topic": "payments", "to": "earliest"}, "READ on topic 'payments'"),
        ("/dead-letters/orders/replay", {}, "READ on topic 'orders.DLQ'"),
    ],
)
async def test_each_write_needs_kafkas_operation(
    console: Console, path: str, form: dict[str, str], operation: str
) -> None:
    assert await console.login("alice", "alice-secret") == 303
    status, text = await console.post(path, form)
    assert status == 403
    assert f"User:alice is not allowed {operation}" in text
    assert "new-topic" not in console.broker.topics
    assert "orders" in console.broker.topics
    assert console.broker.topics["orders"].config.get("retention.ms") != "1000"


async def test_allowed_writes_go_through_and_a_super_user_sees_everything(console: Console) -> None:
    assert await console.login("alice", "alice-secret") == 303
    status, text = await console.post("/topics/orders/messages", {"partition": "1", "value": "hello"})
    assert status == 200
    assert "Produced to partition 1" in text
    status, text = await console.post("/groups/readers/reset", {"topic": "orders", "to": "latest"})
    assert status == 200
    assert "Reset readers on orders to latest" in text
    assert await console.login("admin", "admin-secret") == 303
    topics = await (await console.client.get("/topics")).text()
    assert all(name in topics for name in ("orders", "payments", "audit"))
    status, text = await console.post("/topics", {"name": "made-by-admin", "partitions": "1"})
    assert "made-by-admin" in console.broker.topics


async def test_a_replay_needs_write_on_where_the_letters_go(console: Console) -> None:
    await console.broker.dead_letters.send("audit", 0, b"k", b"v", [], RuntimeError("boom"))
    console.security.acls.add(
        [binding(ResourceType.TOPIC, "audit.DLQ", PatternType.LITERAL, "User:bob", "*", Operation.READ, 3)]
    )
    assert await console.login("bob", "bob-secret") == 303
    status, _ = await console.post("/dead-letters/audit/replay", {})
    assert status == 200
    console.security.acls.add(
        [binding(ResourceType.TOPIC, "audit", PatternType.LITERAL, "User:bob", "*", Operation.WRITE, 2)]
    )
    await console.broker.dead_letters.send("audit", 0, b"k", b"v2", [], RuntimeError("boom"))
    status, text = await console.post("/dead-letters/audit/replay", {})
    assert status == 403
    assert "User:bob is not allowed WRITE on topic 'audit'" in text


async def test_over_https_the_session_cookie_is_secure(tmp_path: Path) -> None:
    from security.certs import make_pki  # the security tests' own PKI (tests/security/certs.py)

    pki = make_pki(tmp_path / "pki")
    _, _, keystore = pki.issue("localhost", server=True)
    security = Security(SETTINGS, None)
    security.credentials.set_password("alice", "SCRAM-SHA-512", "alice-secret")
    trust = ssl.create_default_context(cafile=str(pki.ca_file))
    async with (
        Broker() as broker,
        HttpServer(
            broker,
            "127.0.0.1",
            0,
            security=security,
            kafka_protocols=[SecurityProtocol.SASL_SSL],
            tls=TlsSettings(str(keystore), client_auth=ClientAuth.REQUIRED),  # the console never asks for one
        ) as http,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust)) as client,
    ):
        assert http.url.startswith("https://localhost:")
        page = await (await client.get(http.url + "login")).text()
        token = TOKEN.search(page)
        assert token
        form = {"csrf": token.group(1), "username": "alice", "password": "alice-secret"}
        answer = await client.post(http.url + "login", data=form, allow_redirects=False)
        assert answer.status == 303
        cookie = answer.cookies[COOKIE]
        assert cookie["secure"] is True
        assert cookie["httponly"] is True
