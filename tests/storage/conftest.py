"""Fixtures shared by the storage tests: a fake clock and a factory for either log engine."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.storage import Log, LogConfig, MemoryLog, PartitionLog
from kafkalite.storage.policy import DEFAULT_CONFIG

from .logkit import FakeClock, LogFactory

ENGINES = ["memory", "file"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_log(engine: str, tmp_path: Path, clock: FakeClock) -> Iterator[LogFactory]:
    """Build a log of the parametrised engine (each file log in its own directory); all are closed at teardown."""
    logs: list[Log] = []
    numbers = itertools.count()

    def factory(config: LogConfig = DEFAULT_CONFIG) -> Log:
        log: Log
        if engine == "memory":
            log = MemoryLog(config, clock=clock)
        else:
            log = PartitionLog.open(tmp_path / f"topic-{next(numbers)}", config, clock=clock)
        logs.append(log)
        return log

    yield factory
    for log in logs:
        log.close()
