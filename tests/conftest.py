"""Fixtures shared by `tests/broker` and `tests/client`: `broker` (started, of the parametrised engine) and
`make_broker` (open more, e.g. to restart). `tests/server` and `tests/storage` define their own `broker`/`engine`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import kafkalite
from broker.harness import ENGINES, BrokerFactory


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_broker(engine: str, tmp_path: Path) -> AsyncIterator[BrokerFactory]:
    factory = BrokerFactory(engine, tmp_path)
    yield factory
    await factory.close_all()


@pytest.fixture
async def broker(make_broker: BrokerFactory) -> AsyncIterator[kafkalite.Broker]:
    async with make_broker() as b:
        yield b


pytest_plugins = ["pytester"]  # tests/plugin runs pytest sessions of its own against the installed plugin
