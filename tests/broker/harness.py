"""Shared by the broker and client suites: a broker of either storage engine, fast group timings, bounded waits.

Every seed promise runs on both engines: `memory` is `kafkalite.Broker(data_dir=None)`, `file` is
`kafkalite.Broker(data_dir=<tmp_path>/data)`. Group timings are short (session 0.5 s, heartbeat 50 ms, poll 20 ms) so
rebalances and session expiries happen within a test's few seconds; every wait is bounded by `TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kafkalite

ENGINES = ["memory", "file"]
TIMEOUT_S = 10.0
BROKER_SETTINGS: dict[str, Any] = {"group_min_session_timeout_ms": 1}
CONSUMER_SETTINGS: dict[str, Any] = {
    "poll_interval": 0.02,
    "session_timeout": 0.5,
    "heartbeat_interval": 0.05,
    "auto_offset_reset": "earliest",
    "auto_commit_interval": 0.05,
}


class BrokerFactory:
    """Opens brokers of one engine; the file engine reuses one data directory, so a reopen is a restart."""

    def __init__(self, engine: str, tmp_path: Path) -> None:
        self.engine = engine
        self.data_dir = tmp_path / "data" if engine == "file" else None
        self.opened: list[kafkalite.Broker] = []

    def __call__(self, **settings: Any) -> kafkalite.Broker:
        broker = kafkalite.Broker(data_dir=self.data_dir, **{**BROKER_SETTINGS, **settings})
        self.opened.append(broker)
        return broker

    async def close_all(self) -> None:
        for broker in self.opened:
            await broker.close()


def consumer(broker: kafkalite.Broker, topics: str, group_id: str | None, **options: Any) -> kafkalite.Consumer:
    return broker.consumer(topics, group_id=group_id, **{**CONSUMER_SETTINGS, **options})


async def wait_for(condition: Callable[[], bool], timeout: float = TIMEOUT_S, what: str = "condition") -> None:
    """Poll `condition` every 10 ms; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


async def consume(c: kafkalite.Consumer, count: int, timeout: float = TIMEOUT_S) -> list[kafkalite.Message]:
    """The next `count` messages of `c` (fails after `timeout`)."""
    out: list[kafkalite.Message] = []
    async with asyncio.timeout(timeout):
        while len(out) < count:
            out.extend(await c.getmany(max_records=count - len(out)))
    return out


def hold_back(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> asyncio.Event:
    """Make the async method `cls.name` wait until the returned event is set, then do what it did: a write held
    back, to see what waits for it."""
    gate = asyncio.Event()
    original = getattr(cls, name)

    async def held(self: Any, *args: Any, **kwargs: Any) -> Any:
        await gate.wait()
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, held)
    return gate
