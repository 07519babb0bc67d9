"""`broker`: the one object the application code talks to, in each deployment the same code must run in.

- embedded: `kafkalite.Broker()` in memory, fresh per test;
- served: `kafkalite.connect()` to a `kafkalite serve` process (one per module, no fsync);
- tansu: `kafkalite.connect()` to Tansu, a Kafka-compatible broker written elsewhere (one per module).

The served and Tansu brokers are shared by the module's tests, so every test names its topics and groups through
`names`, which makes them unique.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import kafkalite
from interop.served import ServedBroker
from interop.tansu import Tansu

DEPLOYMENTS = ["embedded", "served", "tansu"]
_counter = itertools.count()


@pytest.fixture(scope="module")
def served_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("served")
    served = ServedBroker(root / "data", root / "serve.log", "--fsync", "never")
    try:
        yield served.start().bootstrap
    finally:
        served.kill()


@pytest.fixture(scope="module")
def tansu_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tansu = Tansu(tmp_path_factory.mktemp("tansu") / "tansu.log")
    try:
        yield tansu.bootstrap
    finally:
        tansu.stop()


@pytest.fixture(params=DEPLOYMENTS)
def deployment(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def broker(deployment: str, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """An entered `kafkalite.Broker` or `kafkalite.connect(...)`: the code under test cannot tell which."""
    if deployment == "embedded":
        handle: Any = kafkalite.Broker(group_min_session_timeout_ms=100)
    else:
        handle = kafkalite.connect(request.getfixturevalue(f"{deployment}_bootstrap"))
    async with handle:
        yield handle


@pytest.fixture
def names(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """`names("orders")` -> a topic or group name no other test of the module uses."""
    serial = next(_counter)
    return lambda base: f"{base}-{serial}"
