"""The console's pages and writes over real HTTP (no browser): what each page shows, what each form changes, and
the guards around writes (Host rule, form token, origin)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition

from kafkalite.server import ThreadedServer

from .conftest import Browser, manual_consumer

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def produce_json(served: ThreadedServer, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": served.bootstrap})
    for i in range(count):
        document = {"n": i, "user": {"id": i % 5, "name": f"user-{i % 5}"}}
        producer.produce(
            topic,
            json.dumps(document).encode(),
            key=b"key-%d" % i,
            partition=partition,
            headers=[("trace", b"t-%d" % i)],
        )
    assert producer.flush(30) == 0


def test_health_and_readiness(browser: Browser) -> None:
    assert browser.get("/healthz").text == "ok\n"
    ready = browser.get("/readyz")
    assert (ready.status, ready.text) == (200, "ready\n")


def test_every_page_is_a_stable_url_with_security_headers(served: ThreadedServer, browser: Browser) -> None:
    served.call(served.broker.create_topic("stable", 2))
    for path in ("/", "/topics", "/topics/stable", "/topics/stable/messages", "/groups", "/dead-letters"):
        answer = browser.get(path)
        assert answer.status == 200, path
        assert "default-src 'self'" in answer.headers["Content-Security-Policy"]
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert "Local-only console" in answer.text
    missing = browser.get("/topics/missing")
    assert missing.status == 404
    assert "There is no topic 'missing'." in missing.text
    assert browser.get("/no/such/page").status == 404
    assert browser.get("/groups/nobody").status == 404
    assert browser.get("/dead-letters/stable").status == 404


def test_create_configure_and_delete_a_topic(served: ThreadedServer, browser: Browser) -> None:
    created = browser.post("/topics", {"name": "made-here", "partitions": "3", "configs": "retention.ms=3600000"})
    assert created.status == 200
    assert created.url.split("?")[0].endswith("/topics/made-here")
    assert "Created topic made-here with 3 partition(s)." in created.text
    topic = served.broker.topics["made-here"]
    assert len(topic.partitions) == 3
    assert topic.config.get("retention.ms") == "3600000"

    refused = browser.post("/topics", {"name": "bad name!", "partitions": "1"})
    assert "Could not create" in refused.text
    assert "bad name!" not in served.broker.topics

    changed = browser.post("/topics/made-here/configs", {"cfg:retention.ms": "7200000", "cfg:segment.bytes": ""})
    assert "Updated retention.ms=7200000" in changed.text, changed.text
    assert topic.config.get("retention.ms") == "7200000"
    bad = browser.post("/topics/made-here/configs", {"cfg:retention.ms": "soon"})
    assert "Configs not changed" in bad.text
    assert topic.config.get("retention.ms") == "7200000"
    reset = browser.post("/topics/made-here/configs", {"cfg:retention.ms": "7200000", "reset:retention.ms": "on"})
    assert "retention.ms=(default)" in reset.text
    assert topic.config.get("retention.ms") == str(7 * 24 * 3600 * 1000)

    unconfirmed = browser.post("/topics/made-here/delete", {"confirm": "made"})
    assert "Type the topic's name" in unconfirmed.text
    assert "made-here" in served.broker.topics
    deleted = browser.post("/topics/made-here/delete", {"confirm": "made-here"})
    assert "Deleted topic made-here." in deleted.text
    assert "made-here" not in served.broker.topics


def test_browse_page_filter_and_views(served: ThreadedServer, browser: Browser) -> None:
    served.call(served.broker.create_topic("browsed", 2))
    produce_json(served, "browsed", 120, partition=1)
    newest = browser.get("/topics/browsed/messages?partition=1")
    assert 'data-offset="119"' in newest.text
    assert 'data-offset="99"' not in newest.text
    assert "Showing 20 from offset 100" in newest.text
    assert "trace" in newest.text
    assert "t-119" in newest.text
    assert '  "user": {\n    "id": 4,' in newest.text  # pretty-printed JSON

    page = browser.get("/topics/browsed/messages?partition=1&offset=40&limit=10")
    offsets = [int(o) for o in re.findall(r'data-offset="(\d+)"', page.text)]
    assert offsets == list(range(40, 50))
    assert "offset=30" in page.text
    assert "offset=50" in page.text

    by_key = browser.get("/topics/browsed/messages?partition=1&filter=key&q=key-7&offset=0")
    assert re.findall(r'data-offset="(\d+)"', by_key.text) == ["7"]
    by_json = browser.get("/topics/browsed/messages?partition=1&filter=json&q=user.id%3D3&limit=200")
    found = [int(o) for o in re.findall(r'data-offset="(\d+)"', by_json.text)]
    assert found == [n for n in range(120) if n % 5 == 3]
    by_text = browser.get("/topics/browsed/messages?partition=1&filter=text&q=user-4&limit=200")
    assert len(re.findall(r'data-offset="(\d+)"', by_text.text)) == 24

    hexed = browser.get("/topics/browsed/messages?partition=1&offset=0&limit=1&view=hex")
    assert "00000000  7b 22 6e 22" in hexed.text  # {"n"

    future = int(time.time() * 1000) + 3_600_000
    at_time = browser.get(f"/topics/browsed/messages?partition=1&time={future}")
    assert "No messages here" in at_time.text
    from_start = browser.get("/topics/browsed/messages?partition=1&time=0&limit=5")
    assert re.findall(r'data-offset="(\d+)"', from_start.text) == ["0", "1", "2", "3", "4"]
    assert browser.get("/topics/browsed/messages?partition=9").status == 400


def test_produce_a_test_message(served: ThreadedServer, browser: Browser) -> None:
    served.call(served.broker.create_topic("tested", 2))
    answer = browser.post(
        "/topics/tested/messages",
        {"partition": "1", "key": "k1", "value": '{"hello": "world"}', "headers": "source: console\nempty:"},
    )
    assert "Produced to partition 1 at offset 0." in answer.text
    [record] = served.broker.read_records("tested", 1, 0, 10)
    assert (record.key, record.value) == (b"k1", b'{"hello": "world"}')
    assert record.headers == (("source", b"console"), ("empty", b""))
    tombstone = browser.post("/topics/tested/messages", {"partition": "0", "key": "gone", "null_value": "on"})
    assert "at offset 0" in tombstone.text
    assert served.broker.read_records("tested", 0, 0, 1)[0].value is None
    internal = browser.post("/topics/__consumer_offsets/messages", {"value": "x"})
    assert "internal topic" in internal.text


def test_writes_need_the_token_and_this_origin(served: ThreadedServer, browser: Browser) -> None:
    form = {"name": "forged", "partitions": "1"}
    no_token = browser.request("POST", "/topics", form)
    assert no_token.status == 403
    assert "token" in no_token.text
    token = browser.token()
    other_origin = browser.request("POST", "/topics", {"csrf": token, **form}, {"Origin": "http://evil.example"})
    assert other_origin.status == 403
    assert "another origin" in other_origin.text
    cross_site = browser.request("POST", "/topics", {"csrf": token, **form}, {"Sec-Fetch-Site": "cross-site"})
    assert cross_site.status == 403
    wrong = browser.request("POST", "/topics", {"csrf": token[:-2] + "xx", **form}, {"Origin": browser.base})
    assert wrong.status == 403
    header_token = browser.request("POST", "/topics", form, {"X-KafkaLite-Token": token, "Origin": browser.base})
    assert header_token.status == 200
    assert "forged" in served.broker.topics  # only the last one, with token and origin, went through


def test_only_local_host_names_are_answered(browser: Browser) -> None:
    rebound = browser.get("/topics", {"Host": "attacker.example:9644"})
    assert rebound.status == 403
    assert "local requests only" in rebound.text
    assert browser.get("/metrics", {"Host": "evil.localhost.example"}).status == 403
    for host in ("localhost", "127.0.0.1:1", "[::1]:9644", "app.localhost"):
        assert browser.get("/healthz", {"Host": host}).status == 200, host


def test_group_lag_and_offset_reset(served: ThreadedServer, browser: Browser) -> None:
    served.call(served.broker.create_topic("laggy", 1))
    produce_json(served, "laggy", 30)
    consumer = manual_consumer(served.bootstrap, "resetters")
    try:
        consumer.subscribe(["laggy"])
        deadline = time.monotonic() + 60
        while consumer.poll(1.0) is None and time.monotonic() < deadline:
            pass
        consumer.commit(offsets=[TopicPartition("laggy", 0, 10)], asynchronous=False)
        stable = browser.get("/groups/resetters")
        assert 'id="group-state">Stable' in stable.text
        assert 'id="total-lag">20' in stable.text
        assert "laggy-0" in stable.text  # the member's decoded assignment
        refused = browser.post("/groups/resetters/reset", {"topic": "laggy", "to": "latest"})
        assert "Offsets not reset" in refused.text
        assert "not empty" in refused.text
    finally:
        consumer.close()
    listed = browser.get("/groups")
    assert "resetters" in listed.text
    assert "Empty" in listed.text
    latest = browser.post("/groups/resetters/reset", {"topic": "laggy", "to": "latest"})
    assert "laggy-0→30" in latest.text
    assert 'id="total-lag">0' in latest.text
    to_offset = browser.post("/groups/resetters/reset", {"topic": "laggy", "to": "offset", "value": "5"})
    assert 'id="total-lag">25' in to_offset.text
    earliest = browser.post("/groups/resetters/reset", {"topic": "laggy", "to": "earliest"})
    assert 'id="total-lag">30' in earliest.text
    at_time = browser.post("/groups/resetters/reset", {"topic": "laggy", "to": "time", "value": "2999-01-01T00:00"})
    assert 'id="total-lag">0' in at_time.text
    bad = browser.post("/groups/resetters/reset", {"topic": "laggy", "to": "offset", "value": "five"})
    assert "Offsets not reset" in bad.text


def test_dead_letters_preview_then_replay(served: ThreadedServer, browser: Browser) -> None:
    broker = served.broker
    served.call(broker.create_topic("payments", 2))
    for partition, offset in ((0, 7), (1, 8), (1, 9)):
        served.call(
            broker.dead_letters.send(
                "payments",
                partition,
                b"k%d" % offset,
                b'{"amount": 5}',
                [("trace", b"x")],
                ValueError(f"card declined {offset}"),
                offset=offset,
                group_id="billing",
            )
        )
    listing = browser.get("/dead-letters")
    assert "payments.DLQ" in listing.text
    page = browser.get("/dead-letters/payments?partition=1")
    assert "card declined 8" in page.text
    assert "card declined 9" in page.text
    assert "builtins.ValueError" in page.text
    assert "payments-1 @ 8" in page.text
    assert "billing" in page.text
    preview = browser.get("/dead-letters/payments?preview=1")
    assert 'id="replay-preview"' in preview.text
    assert "<b>3</b> letter(s) would be redelivered, each to the group that failed it" in preview.text
    assert "payments.billing.retry" in preview.text
    assert broker.topics["payments"].partitions[1].high_watermark == 0  # a preview changes nothing
    replayed = browser.post("/dead-letters/payments/replay", {})
    assert "Replayed 3 dead letter(s) to payments.billing.retry." in replayed.text  # billing's alone
    assert [p.high_watermark for p in broker.topics["payments.billing.retry"].partitions] == [1, 2]
    assert [p.high_watermark for p in broker.topics["payments"].partitions] == [0, 0]
    again = browser.get("/dead-letters/payments?preview=1")
    assert "Nothing to replay" in again.text


def test_bad_input_gets_a_clear_answer_and_changes_nothing(served: ThreadedServer, browser: Browser) -> None:
    served.call(served.broker.create_topic("strict", 1, {"max.message.bytes": "1024"}))
    for path, expected in (
        ("/topics/strict/messages?partition=x", "not a whole number"),
        ("/topics/strict/messages?partition=-1", "has no partition"),
        ("/topics/strict/messages?time=yesterday", "ISO date-time"),
    ):
        answer = browser.get(path)
        assert answer.status == 400, path
        assert expected in answer.text, path
    huge = browser.post("/topics/strict/messages", {"value": "x" * 5000})
    assert "Not produced" in huge.text
    assert "max.message.bytes" in huge.text
    missing = browser.post("/topics/absent/messages", {"value": "x"})
    assert "Not produced" in missing.text
    assert "absent" not in served.broker.topics
    bad_count = browser.post("/topics", {"name": "counted", "partitions": "many"})
    assert "partitions must be a whole number" in bad_count.text
    bad_config = browser.post("/topics", {"name": "configured", "partitions": "1", "configs": "retention.ms"})
    assert "not key=value" in bad_config.text
    unknown = browser.post("/groups/nobody/reset", {"topic": "absent", "to": "latest"})
    assert "Offsets not reset" in unknown.text
    wrong_target = browser.post("/groups/nobody/reset", {"topic": "strict", "to": "tomorrow"})
    assert "reset to one of" in wrong_target.text
    assert set(served.broker.topics) == {"__consumer_offsets", "strict"}
    assert served.broker.offsets.committed("nobody") == {}
    assert browser.get("/healthz").status == 200  # and the broker serves on


FIRST_PAGE_SCRIPT = """
import sys, urllib.request
from kafkalite.server import run_in_thread

with run_in_thread(sys.argv[1], http_port=0) as served:
    seen = ["jinja2" in sys.modules]
    with urllib.request.urlopen(served.http_url + "metrics", timeout=30) as answer:
        answer.read()
    seen.append("jinja2" in sys.modules)
    with urllib.request.urlopen(served.http_url, timeout=30) as answer:
        page = answer.read().decode()
    seen.append("jinja2" in sys.modules)
from importlib.metadata import version
print(seen, f"<footer>KafkaLite {version('kafkalite')}</footer>" in page)
"""


def test_jinja_is_imported_on_the_first_page_not_at_start(tmp_path: Path) -> None:
    """A console that only answers /metrics never imports Jinja (a quarter of its start-up imports); the first page
    renders as before, footer version included."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_PAGE_SCRIPT, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[False,", "False,", "True]", "True"]
