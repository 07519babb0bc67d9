"""The console end to end in a real browser: Debian's chromium, driven by Playwright (never a downloaded browser).

One story, as a person would click it: create a topic, produce through a Kafka client, browse the messages, watch a
group's lag fall as it consumes, reset its offsets, replay a dead letter. Then every page is captured light and
dark (and at phone width) as test artifacts under pytest's temporary directory, and checked for script errors:
the Content-Security-Policy would report any inline script or style the pages relied on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from playwright import sync_api as playwright_api

from kafkalite.server import ThreadedServer, run_in_thread

from .conftest import manual_consumer

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

PAGES = {
    "overview": "/",
    "topics": "/topics",
    "topic": "/topics/e2e-orders",
    "messages": "/topics/e2e-orders/messages?partition=0",
    "groups": "/groups",
    "group": "/groups/e2e-readers",
    "dead-letters": "/dead-letters",
    "dead-letter-topic": "/dead-letters/e2e-orders?preview=1",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    with run_in_thread(tmp_path_factory.mktemp("browser") / "data", http_port=0, fsync=False) as server:
        yield server


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("console-screenshots")


def lag_shown(page: playwright_api.Page) -> int:
    return int(page.locator("#total-lag").inner_text().replace(",", ""))


def consume(consumer: Consumer, count: int) -> int:
    seen = 0
    deadline = time.monotonic() + 60
    while seen < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    return seen


def test_console_story_in_chromium(served: ThreadedServer, chromium: playwright_api.Browser, shots: Path) -> None:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: dialog.accept())
    base = served.http_url.rstrip("/")

    # create a topic from the topics page
    page.goto(base + "/topics")
    page.fill("#create-topic input[name=name]", "e2e-orders")
    page.fill("#create-topic input[name=partitions]", "2")
    page.click("#create-topic button[type=submit]")
    page.wait_for_url("**/topics/e2e-orders?notice=*")
    assert "Created topic e2e-orders with 2 partition(s)." in page.locator(".notice").inner_text()
    assert page.locator("#partitions tbody tr").count() == 2

    # produce through a real Kafka client, then browse
    producer = Producer({"bootstrap.servers": served.bootstrap, "linger.ms": 5})
    for i in range(200):
        value = json.dumps({"order": i, "customer": {"id": i % 7}, "total": round(i * 1.25, 2)})
        producer.produce(
            "e2e-orders", value.encode(), key=b"order-%d" % i, partition=i % 2, headers=[("source", b"e2e")]
        )
    assert producer.flush(30) == 0
    page.goto(base + "/topics/e2e-orders/messages?partition=0")
    assert page.locator("#records .record").count() == 20
    assert page.locator("#records .record").last.get_attribute("data-offset") == "99"
    page.click("#page-back")
    assert page.locator("#records .record").first.get_attribute("data-offset") == "60"
    page.select_option("#browse-form select[name=filter]", "key")
    page.fill("#browse-form input[name=q]", "order-42")
    page.fill("#browse-form input[name=offset]", "0")
    page.click("#browse-form button[type=submit]")
    assert page.locator("#records .record").count() == 1
    assert '"order": 42' in page.locator("#records .record pre").inner_text()
    page.select_option("#browse-form select[name=view]", "hex")
    page.click("#browse-form button[type=submit]")
    assert "7b 22 6f 72" in page.locator("#records .record pre.hex").last.inner_text()  # {"or

    # produce a test message from the page
    page.goto(base + "/topics/e2e-orders/messages?partition=1")
    page.fill("#produce-form input[name=key]", "from-the-console")
    page.fill("#produce-form textarea[name=value]", '{"hello": "browser"}')
    page.click("#produce-form button[type=submit]")
    assert "Produced to partition 1 at offset 100." in page.locator(".notice").inner_text()
    assert page.locator('#records .record[data-offset="100"] .key').inner_text() == "key from-the-console"

    # a group consumes: its lag falls as it commits
    consumer = manual_consumer(served.bootstrap, "e2e-readers")
    lags = []
    try:
        consumer.subscribe(["e2e-orders"])
        consume(consumer, 0)
        # start from a commit at offset 0 on both partitions, so every partition counts from the first page on
        consumer.commit(offsets=[TopicPartition("e2e-orders", p, 0) for p in (0, 1)], asynchronous=False)
        page.goto(base + "/groups/e2e-readers")
        lags.append(lag_shown(page))
        for _ in range(3):
            assert consume(consumer, 50) == 50
            consumer.commit(asynchronous=False)
            page.goto(base + "/groups/e2e-readers")
            lags.append(lag_shown(page))
        assert page.locator("#group-state").inner_text() == "Stable"
        assert "e2e-orders-0" in page.locator("#members").inner_text()
        page.screenshot(path=str(shots / "group-consuming-light.png"), full_page=True)
    finally:
        consumer.close()
    assert lags == [201, 151, 101, 51]

    # the group is Empty now: reset it to the earliest offsets
    page.goto(base + "/groups/e2e-readers")
    assert page.locator("#group-state").inner_text() == "Empty"
    page.select_option("#reset-form select[name=topic]", "e2e-orders")
    page.select_option("#reset-form select[name=to]", "earliest")
    page.click("#reset-form button[type=submit]")
    page.wait_for_url("**/groups/e2e-readers?notice=*")
    assert lag_shown(page) == 201
    assert "Reset e2e-readers on e2e-orders to earliest" in page.locator(".notice").inner_text()

    # a dead letter: preview the replay, then replay it
    served.call(
        served.broker.dead_letters.send(
            "e2e-orders",
            1,
            b"order-7",
            b'{"order": 7}',
            [("source", b"e2e")],
            ValueError("no such customer"),
            offset=3,
            group_id="e2e-readers",
        )
    )
    page.goto(base + "/dead-letters")
    page.click("text=e2e-orders >> nth=0")
    assert "no such customer" in page.locator("#letters").inner_text()
    page.click("#preview-replay")
    assert "1 letter(s) would be redelivered" in page.locator("#replay-preview").inner_text()
    page.click("#replay-form button[type=submit]")
    assert "Replayed 1 dead letter(s) to e2e-orders.e2e-readers.retry." in page.locator(".notice").inner_text()
    assert served.broker.topics["e2e-orders.e2e-readers.retry"].partitions[1].high_watermark == 1

    # the overview's chart updates by itself
    page.goto(base + "/")
    for _ in range(3):
        producer.produce("e2e-orders", b"x" * 2000, partition=0)
        producer.flush(10)
        page.wait_for_timeout(2100)
    page.wait_for_function("document.querySelector('#rate-chart polyline.line.in').getAttribute('points')")
    assert page.locator("#rate-in").inner_text() != "–"
    assert errors == [], errors
    context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_light_and_dark_and_at_phone_width(
    served: ThreadedServer, chromium: playwright_api.Browser, shots: Path, scheme: str
) -> None:
    if "e2e-orders" not in served.broker.topics:  # run alone: give the pages something to show
        served.call(served.broker.create_topic("e2e-orders", 2))
        served.call(served.broker.dead_letters.send("e2e-orders", 0, b"k", b"v", [], ValueError("x")))
    base = served.http_url.rstrip("/")
    for width, height, suffix in ((1280, 900, ""), (390, 844, "-phone")):
        context = chromium.new_context(
            color_scheme=scheme, viewport={"width": width, "height": height}, device_scale_factor=1
        )
        page = context.new_page()
        errors: list[str] = []
        page.on(
            "console", lambda message, errors=errors: errors.append(message.text) if message.type == "error" else None
        )
        for name, path in PAGES.items():
            if path.startswith("/groups/") and not served.broker.offsets.committed("e2e-readers"):
                continue
            answer = page.goto(base + path)
            assert answer is not None, name
            assert answer.status == 200, (name, answer.status)
            background = page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert (background == "rgb(13, 17, 23)") == (scheme == "dark"), background
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 1, f"{name} is wider than the {width}px screen by {overflow}px"
            page.screenshot(path=str(shots / f"{name}-{scheme}{suffix}.png"), full_page=True)
        assert errors == [], errors
        context.close()
    assert len(list(shots.glob(f"*-{scheme}*.png"))) >= len(PAGES)
