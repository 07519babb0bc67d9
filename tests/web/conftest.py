"""Fixtures: a real broker served on random ports (Kafka and HTTP) from a background thread, and helpers that
talk to its HTTP listener the way a browser or Prometheus does (real sockets, no test client), and Debian's chromium
driven by Playwright for the browser tests (never a downloaded browser)."""

from __future__ import annotations

import html
import os
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from playwright import sync_api as playwright_api

from kafkalite.server import ThreadedServer, run_in_thread

CHROMIUM = os.environ.get("KAFKALITE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Answer:
    status: int
    body: str
    headers: dict[str, str]
    url: str

    @property
    def text(self) -> str:
        """The body with HTML entities decoded (what a person reads)."""
        return html.unescape(self.body)


class Browser:
    """A minimal HTTP client for the console: GET pages, POST forms with the page's token, no redirects hidden."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.host = urllib.parse.urlsplit(self.base).netloc

    def request(
        self, method: str, path: str, data: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> Answer:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.base + path, data=body, method=method, headers=headers or {})
        if body is not None:
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Answer(response.status, response.read().decode(), dict(response.headers), response.url)
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.read().decode(), dict(error.headers), error.url)

    def get(self, path: str, headers: dict[str, str] | None = None) -> Answer:
        return self.request("GET", path, headers=headers)

    def token(self, path: str = "/topics") -> str:
        match = TOKEN.search(self.get(path).body)
        assert match, "no form token in the page"
        return match.group(1)

    def post(self, path: str, data: dict[str, str], *, origin: bool = True) -> Answer:
        """POST a form as a page of this console would (its token, its Origin); follows the redirect."""
        headers = {"Origin": self.base} if origin else {}
        return self.request("POST", path, {"csrf": self.token(), **data}, headers)


def manual_consumer(bootstrap: str, group: str) -> Consumer:
    """A confluent-kafka group consumer from the earliest offset that commits only when told to."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ThreadedServer]:
    with run_in_thread(tmp_path / "data", http_port=0) as server:
        yield server


@pytest.fixture
def browser(served: ThreadedServer) -> Browser:
    return Browser(served.http_url)


@pytest.fixture(scope="module")
def chromium() -> Iterator[playwright_api.Browser]:
    assert shutil.which(CHROMIUM) or Path(CHROMIUM).exists(), (
        f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium chromium-driver; .ci/run does)"
    )
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
