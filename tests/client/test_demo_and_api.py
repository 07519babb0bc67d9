"""The seed's demo end to end (in process and as `python main.py`), its log format, and the public API."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import kafkalite
from kafkalite.demo import DemoSettings, run_demo
from kafkalite.logs import MAX_MESSAGE_CHARS

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| (DEBUG|INFO|WARNING|ERROR) \| [\w.-]+ \| .+$")


@pytest.mark.parametrize("engine", ["memory", "file"])
async def test_run_demo_consumes_everything_in_every_group(tmp_path: Path, engine: str) -> None:
    data_dir = tmp_path / "demo" if engine == "file" else None
    summary = await run_demo(DemoSettings(messages_per_producer=6, data_dir=data_dir, timeout=20))
    assert summary.produced == 18
    assert summary.rebalanced
    assert summary.dead_lettered["billing"] == 1
    assert summary.dead_lettered["fulfillment"] == 0
    assert summary.replayed == {"billing": 1}
    # billing handles 17 the first time and the replayed poison message once the bug is fixed
    assert summary.consumed["billing"] == 18
    assert summary.consumed["fulfillment"] == 18  # the replay went to billing alone
    assert summary.seconds < 20


def test_main_py_runs_the_demo_and_logs_in_the_seed_format(tmp_path: Path) -> None:
    log_file = tmp_path / "demo.log"
    done = subprocess.run(
        [sys.executable, "main.py", "--messages", "5", "--log-file", str(log_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines
    assert all(LINE.match(line) for line in lines), [line for line in lines if not LINE.match(line)][:5]
    text = done.stderr
    for story in ("| INFO | broker |", "| INFO | producer |", "| INFO | consumer |", "| INFO | dlq |"):
        assert story in text, story
    assert "Routing" in text or "partition" in text
    assert "rebalance" in text.lower()
    assert log_file.read_text().splitlines() == [line for line in done.stderr.splitlines()]
    assert "billing" in done.stdout
    assert "fulfillment" in done.stdout


def test_configure_logging_uses_the_seed_line_format(capsys: pytest.CaptureFixture[str]) -> None:
    kafkalite.configure_logging("INFO")
    try:
        logging.getLogger("kafkalite.broker").info("Routing producer=%d to topic=%s partition=%d", 1, "orders", 1)
        logging.getLogger("kafkalite.broker").debug("hidden at INFO")
    finally:
        kafkalite.configure_logging("WARNING")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert LINE.match(err[0])
    assert err[0].endswith(" | INFO | broker | Routing producer=1 to topic=orders partition=1")


def test_a_log_line_stays_one_bounded_line_whatever_a_client_named(capsys: pytest.CaptureFixture[str]) -> None:
    """A topic name with a newline cannot forge a second line, a 64 KB name cannot make a 64 KB line, and a
    traceback still shows whole."""
    kafkalite.configure_logging("INFO")
    log = logging.getLogger("kafkalite.server")
    try:
        log.info("Refused topic=%s", "orders\n2026-01-01 00:00:00 | INFO | broker | forged\x1b[2J")
        log.info("Refused topic=%s", "s" * 65_536)
        try:
            raise ValueError("inside")
        except ValueError:
            log.exception("Closing connection after an unexpected error")
    finally:
        kafkalite.configure_logging("WARNING")
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("| server | Refused topic=orders\\n2026-01-01 00:00:00 | INFO | broker | forged\\x1b[2J")
    assert len(err[1]) < MAX_MESSAGE_CHARS + 100
    assert err[1].endswith(f"... [{65_536 + len('Refused topic=') - MAX_MESSAGE_CHARS} more characters]")
    assert err[2].endswith("Closing connection after an unexpected error")
    assert err[3] == "Traceback (most recent call last):"
    assert err[-1] == "ValueError: inside"


def test_public_api_names_exist_and_are_what_they_say() -> None:
    assert sorted(kafkalite.__all__) == sorted(set(kafkalite.__all__))
    for name in kafkalite.__all__:
        assert hasattr(kafkalite, name), name
    assert set(kafkalite.__all__) >= {
        "Broker",
        "BrokerConfig",
        "Consumer",
        "DeadLetter",
        "KafkaLiteError",
        "Message",
        "Producer",
        "RecordMetadata",
        "configure_logging",
        "errors",
    }
    assert issubclass(kafkalite.Broker, kafkalite.broker.Broker)
    assert callable(kafkalite.Broker.producer)
    assert callable(kafkalite.Broker.consumer)
    assert kafkalite.KafkaLiteError is kafkalite.errors.KafkaLiteError
    public = {n for n, v in vars(kafkalite).items() if not n.startswith("_") and not isinstance(v, ModuleType)}
    assert public <= set(kafkalite.__all__), "a public name missing from __all__"


async def test_the_issue_example_runs_as_written(tmp_path: Path) -> None:
    async with kafkalite.Broker(data_dir=tmp_path / "data") as broker:
        await broker.create_topic("orders", partitions=3)
        async with broker.producer(partitioner="md5") as producer:
            meta = await producer.send("orders", b"payload", key=b"user-1", headers=[("source", b"web")])
        assert (meta.topic, meta.offset) == ("orders", 0)
        async with broker.consumer(
            "orders", group_id="billing", poll_interval=0.1, auto_offset_reset="earliest"
        ) as consumer:
            async for msg in consumer:
                assert (msg.topic, msg.partition, msg.offset, msg.key, msg.value) == (
                    "orders",
                    meta.partition,
                    0,
                    b"user-1",
                    b"payload",
                )
                assert msg.headers == (("source", b"web"),)
                break
            await consumer.commit()
            assert consumer.assignment() == {("orders", 0), ("orders", 1), ("orders", 2)}
            await consumer.seek("orders", meta.partition, 0)


def test_the_same_demo_runs_against_a_served_broker_through_connect() -> None:
    """One application, another deployment: the story over the wire, replay to billing alone included."""
    from kafkalite.server.inprocess import run_in_thread

    with run_in_thread(fsync=False) as server:
        settings = DemoSettings(messages_per_producer=6, bootstrap=server.bootstrap, timeout=60)
        summary = asyncio.run(run_demo(settings))
    assert summary.produced == 18
    assert summary.dead_lettered == {"billing": 1}
    assert summary.replayed == {"billing": 1}
    assert summary.consumed == {"billing": 18, "fulfillment": 18}
