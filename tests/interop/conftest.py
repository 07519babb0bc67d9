"""Fixtures: `kafkalite serve` processes. `served` is one process shared by a module (no fsync, 3 partitions per
auto-created topic; tests use their own topic names); `serve` starts fresh processes for one test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .served import ServedBroker

THROWAWAY = ("--fsync", "never", "--num-partitions", "3")

Serve = Callable[..., ServedBroker]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """`serve(*args, data_dir=...)` starts a `kafkalite serve` over `data_dir` (default tmp_path/data); all are killed
    at teardown."""
    started: list[ServedBroker] = []

    def start(*args: str, data_dir: Path | None = None) -> ServedBroker:
        broker = ServedBroker(data_dir or tmp_path / "data", tmp_path / f"serve-{len(started)}.log", *args)
        started.append(broker)
        return broker.start()

    try:
        yield start
    finally:
        for broker in started:
            broker.kill()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedBroker]:
    root = tmp_path_factory.mktemp("served")
    broker = ServedBroker(root / "data", root / "serve.log", *THROWAWAY)
    try:
        yield broker.start()
    finally:
        broker.kill()
