"""KafkaLite's pytest plugin, registered through the `pytest11` entry point: installing KafkaLite is enough.

Fixtures:

- `kafkalite_broker` (function scope, async; needs pytest-asyncio): a fresh embedded `kafkalite.Broker` in memory,
  started, closed after the test. With `--kafka-bootstrap` it is `kafkalite.connect(...)` to that cluster instead:
  the same interface, so application code written against the embedded broker is tested against real Kafka too.
- `kafkalite_server` (session scope): a KafkaLite broker served on the Kafka wire protocol on a free port of
  127.0.0.1, from a background thread of the test process (in memory, no fsync); `.bootstrap` is its address. With
  `--kafka-bootstrap` it stands for that external cluster. Shared by the whole session: give each test its own topics
  with `kafka_topic`.
- `kafka_topic` (function scope): a factory, `kafka_topic("orders", partitions=3) -> "orders-1a2b3c4d"`, creating a
  topic with a unique name on `kafkalite_server` and deleting it after the test, so tests never see each other's
  records however the session is ordered.
- `kafka_bootstrap` (session scope): the `host:port` string to hand any Kafka client (confluent-kafka, aiokafka,
  kafka-python, FastStream, kcat): `kafkalite_server`'s address, or `--kafka-bootstrap`'s.

Option: `--kafka-bootstrap HOST:PORT[,HOST:PORT...]` (or `$KAFKALITE_TEST_BOOTSTRAP`): run the same fixtures
against an existing cluster, e.g. Apache Kafka in a nightly job.

Start-up: this module is imported by every pytest run in an environment where KafkaLite is installed, so it imports
only pytest at module level; the broker, the server and the network client are imported by the fixtures that need
them, when first used.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kafkalite.server.inprocess import ThreadedServer

BOOTSTRAP_ENV = "KAFKALITE_TEST_BOOTSTRAP"
TopicFactory = Callable[..., str]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafkalite", "KafkaLite fixtures")
    group.addoption(
        "--kafka-bootstrap",
        dest="kafka_bootstrap",
        default=os.environ.get(BOOTSTRAP_ENV),
        metavar="HOST:PORT",
        help=(
            "run kafkalite_broker, kafkalite_server, kafka_topic and kafka_bootstrap against this Kafka cluster "
            f"instead of KafkaLite (default: ${BOOTSTRAP_ENV}, else an in-process KafkaLite)"
        ),
    )


def pytest_configure(config: pytest.Config) -> None:
    bootstrap = config.getoption("kafka_bootstrap", None)
    if bootstrap:
        from kafkalite.client.network import parse_bootstrap

        try:
            parse_bootstrap(bootstrap)
        except ValueError as exc:
            raise pytest.UsageError(f"--kafka-bootstrap: {exc}") from None


def _external(config: pytest.Config) -> str | None:
    bootstrap = config.getoption("kafka_bootstrap", None)
    return str(bootstrap) if bootstrap else None


@dataclass
class KafkaServer:
    """What `kafkalite_server` yields: a Kafka cluster's address and topic administration, usable from sync tests.

    `external` is True when it stands for the `--kafka-bootstrap` cluster. `broker` is the served KafkaLite `Broker`
    (None when external); touch it only through `call`, on the server's own event loop.
    """

    bootstrap: str
    external: bool
    _threaded: ThreadedServer | None = None
    _settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def broker(self) -> Any:
        return None if self._threaded is None else self._threaded.broker

    def call(self, coroutine: Any, timeout_s: float = 30.0) -> Any:
        """Run a coroutine on the served broker's event loop (`server.call(server.broker.create_topic("t", 3))`)."""
        if self._threaded is None:
            coroutine.close()
            raise RuntimeError("an external cluster (--kafka-bootstrap) has no in-process broker to call")
        return self._threaded.call(coroutine, timeout_s)

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        self._run("create_topic", name, partitions, config)

    def delete_topic(self, name: str) -> None:
        self._run("delete_topic", name)

    def list_topics(self) -> list[str]:
        if self._threaded is not None:
            return list(self._threaded.call(_topic_names(self._threaded.broker)))
        return list(self._run("list_topics"))

    def _run(self, method: str, *args: Any) -> Any:
        """`method` of the served `Broker` on its loop, or of a `kafkalite.connect()` cluster: the same interface."""
        if self._threaded is not None:
            return self._threaded.call(getattr(self._threaded.broker, method)(*args))
        return _run_outside_any_loop(_on_cluster(self.bootstrap, self._settings, method, args))


async def _topic_names(broker: Any) -> list[str]:
    return sorted(broker.topics)


async def _on_cluster(bootstrap: str, settings: Mapping[str, Any], method: str, args: tuple[Any, ...]) -> Any:
    from kafkalite.client.network import connect

    async with connect(bootstrap, **settings) as cluster:
        return await getattr(cluster, method)(*args)


def _run_outside_any_loop(coroutine: Any) -> Any:
    """`asyncio.run` from sync code, also when the calling test runs inside an event loop (run it on a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="session")
def kafkalite_server(request: pytest.FixtureRequest) -> Iterator[KafkaServer]:
    """A KafkaLite broker served on a free port for the whole session (or the `--kafka-bootstrap` cluster)."""
    external = _external(request.config)
    if external is not None:
        yield KafkaServer(external, external=True)
        return
    from kafkalite.protocol.kio_import import import_kio_without_hypothesis

    import_kio_without_hypothesis()
    from kafkalite.server.inprocess import run_in_thread

    with run_in_thread(data_dir=None, fsync=False, group_min_session_timeout_ms=100) as threaded:
        yield KafkaServer(threaded.bootstrap, external=False, _threaded=threaded)


@pytest.fixture(scope="session")
def kafka_bootstrap(kafkalite_server: KafkaServer) -> str:
    """`host:port` of the session's Kafka cluster, for any client library."""
    return kafkalite_server.bootstrap


@pytest.fixture
def kafka_topic(kafkalite_server: KafkaServer) -> Iterator[TopicFactory]:
    """`kafka_topic(base="topic", partitions=1, config=None)` creates a uniquely named topic and returns its name;
    every topic made this way is deleted after the test."""
    created: list[str] = []

    def make(base: str = "topic", partitions: int = 1, config: Mapping[str, str] | None = None) -> str:
        name = f"{base}-{uuid.uuid4().hex[:8]}"
        kafkalite_server.create_topic(name, partitions, config)
        created.append(name)
        return name

    yield make
    for name in created:
        kafkalite_server.delete_topic(name)


def _async_fixture() -> Callable[[Callable[..., Any]], Any]:
    """pytest-asyncio's fixture decorator (async fixtures need it in its strict mode), or a stand-in that fails with
    what to install."""
    try:
        import pytest_asyncio
    except ImportError:

        def stand_in(function: Callable[..., Any]) -> Any:
            def missing(request: pytest.FixtureRequest) -> None:
                pytest.fail(f"{function.__name__} is an async fixture: install pytest-asyncio to use it", False)

            missing.__name__ = function.__name__
            missing.__doc__ = function.__doc__
            return pytest.fixture(missing)

        return stand_in
    decorate: Callable[[Callable[..., Any]], Any] = pytest_asyncio.fixture
    return decorate


@_async_fixture()
async def kafkalite_broker(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """A fresh embedded broker in memory, started (or `kafkalite.connect()` to the `--kafka-bootstrap` cluster)."""
    external = _external(request.config)
    if external is not None:
        from kafkalite.client.network import connect

        handle: Any = connect(external)
    else:
        from kafkalite.client import Broker

        handle = Broker(data_dir=None, group_min_session_timeout_ms=100)
    async with handle:
        yield handle
