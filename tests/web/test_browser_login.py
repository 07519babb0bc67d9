"""The console's login in a real browser (Debian's chromium, driven by Playwright) against a broker that authenticates
(a SASL_PLAINTEXT listener, SCRAM-SHA-512 users, the authorizer on): a wrong password is refused, a user with ACLs on
one topic sees only that topic, a write its ACLs do not allow shows the refusal, and logout ends the session.
Screenshots of the login page and the filtered topic list are saved as test artifacts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright import sync_api as playwright_api

from kafkalite.security.acls import Operation, PatternType, Permission, ResourceType, binding
from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

SECURED = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "authorizer.class.name": "kafkalite.security.Authorizer",
    "super.users": "User:admin",
    "connection.failed.authentication.delay.ms": "0",
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    with run_in_thread(
        tmp_path_factory.mktemp("login") / "data", http_port=0, fsync=False, properties=SECURED
    ) as server:

        async def prepare() -> None:
            security = server.server.security
            security.credentials.set_password("alice", "SCRAM-SHA-512", "alice-secret")
            security.acls.add(
                [
                    binding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", op, Permission.ALLOW)
                    for op in (Operation.READ, Operation.WRITE)
                ]
            )
            await server.broker.create_topic("orders", 1)
            await server.broker.create_topic("payments", 1)

        server.call(prepare())
        yield server


def test_login_acl_filtered_topics_refused_write_and_logout(
    secured: ThreadedServer, chromium: playwright_api.Browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    shots = tmp_path_factory.mktemp("login-screenshots")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: dialog.accept())
    base = secured.http_url.rstrip("/")

    page.goto(base + "/topics")
    page.wait_for_url("**/login?next=*")
    page.screenshot(path=str(shots / "login.png"), full_page=True)
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "not-her-password")
    page.click("form[action='/login'] button[type=submit]")
    assert "Login failed: unknown user or wrong password." in page.locator("#login-error").inner_text()
    assert "/login" in page.url

    page.fill("input[name=password]", "alice-secret")
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_url(base + "/topics")
    assert page.locator("#signed-in-as").inner_text() == "User:alice"
    listed = page.locator("table a[href^='/topics/']").all_inner_texts()
    assert "orders" in listed
    assert "payments" not in " ".join(listed)
    page.screenshot(path=str(shots / "topics-as-alice.png"), full_page=True)
    cookie = next(c for c in context.cookies() if c["name"] == "kafkalite_session")
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Strict"

    page.fill("#create-topic input[name=name]", "sneaky")
    page.fill("#create-topic input[name=partitions]", "1")
    page.click("#create-topic button[type=submit]")
    assert "User:alice is not allowed CREATE on the cluster or on topic 'sneaky'" in page.locator("main").inner_text()
    assert "sneaky" not in secured.broker.topics

    page.goto(base + "/topics/payments")
    assert "User:alice is not allowed DESCRIBE on topic 'payments'" in page.locator("main").inner_text()

    page.click("#logout")
    page.wait_for_url("**/login")
    page.goto(base + "/topics")
    page.wait_for_url("**/login?next=*")
    assert errors == []
    context.close()
