"""Fixtures shared by the storage tests: a fake clock and a factory for either log engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.storage import Log, LogConfig, MemoryLog
from kafkalite.storage.policy import DEFAULT_CONFIG

from .logkit import FakeClock, LogFactory

ENGINES = ["memory"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_log(engine: str, tmp_path: Path, clock: FakeClock) -> Iterator[LogFactory]:
    """Build a log of the parametrised engine; every log built is closed at teardown."""
    logs: list[Log] = []

    def factory(config: LogConfig = DEFAULT_CONFIG) -> Log:
        log: Log = MemoryLog(config, clock=clock)
        logs.append(log)
        return log

    yield factory
    for log in logs:
        log.close()
