"""A stateful faust application (faust-streaming) against `kafkalite serve`, at-least-once: its table's compacted
changelog, and restores across the app's restart and the broker's.

`faust_app.py` (a real `faust.App` worker, in its own process) does the job of `quix_app.py`: a per-key running count
and sum, kept in a table whose changelog topic faust creates compacted and restores the table from at every start
(the table lives in memory). faust runs its own partition assignor inside the classic group protocol and commits its
offsets every 20 inputs. The broker compacts the changelog while the app works (`stream_apps.BROKER_ARGS`). Checked:
* every input is counted, and each key's last result holds its whole count;
* the changelog is `cleanup.policy=compact`, and after thousands of updates of its four keys holds a handful of
  records in a few segments;
* a restarted app restores its table from the cleaned changelog (across the gaps cleaning leaves) and counts on from
  it, not from zero;
* after the broker restarts under it, the app reconnects and carries on in its group (the broker keeps the group's
  members across a restart), without a rebalance or a recovery: each input is counted exactly once.
Not checked across the app's own restart: that no input is counted twice. At-least-once counts again the inputs after
the last offset commit when the app rejoins.

Inputs are sent once the app says "Worker ready", never while it recovers: faust 0.15 may skip inputs it fetched
before its recovery seeks back. That race, and why its `exactly_once` is not tested here, are in
docs/guides/stream-processing.md ("faust").
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from .clients import WAIT_S, until
from .conftest import Serve
from .stream_apps import (
    BROKER_ARGS,
    App,
    Topics,
    apps_python,
    assert_compacted,
    expected,
    outputs,
    produce_numbers,
)

if apps_python("faust") is None:  # `make test` builds .venv-apps with the `apps` extra
    pytest.skip("no interpreter with faust-streaming: run `make .venv-apps/.installed`", allow_module_level=True)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

TOPICS = Topics("numbers", "sums", "summer-totals-changelog")
STATE_KEYS = 4  # one table entry ({"seq", "sum"}) per input key
READY = "[^---Recovery]: Worker ready"


@pytest.fixture
def app(serve: Serve, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[App]:
    broker = serve(*BROKER_ARGS)
    # faust creates its internal topics (the changelog, its assignor's) and expects the app's own to exist, as a
    # deployment creates them; the table's partitions must match its source topic's.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(TOPICS.source, 1), NewTopic(TOPICS.sink, 1)]).values():
        future.result(WAIT_S)
    started = App(
        Path(__file__).with_name("faust_app.py"), broker, tmp_path / "state", request.param, tmp_path / "app.log"
    )
    try:
        yield started
    finally:
        started.kill()


def results(bootstrap: str) -> dict[str, list[dict[str, int]]]:
    """The app's outputs per key as `expected` gives them: seq and sum."""
    return {
        key: [{"seq": r["seq"], "sum": r["sum"]} for r in values]
        for key, values in outputs(bootstrap, TOPICS.sink).items()
    }


def counted(bootstrap: str) -> set[int]:
    """Every input that has an output: counted at least once."""
    return {r["n"] for values in outputs(bootstrap, TOPICS.sink).values() for r in values}


def wait_until_ready(app: App, times: int) -> None:
    """Until the app has finished its `times`-th recovery (its log says so once per assignment)."""
    until(
        lambda: app.log_path.read_text().count(READY) >= times,
        lambda: f"the app's recovery number {times}; app log:\n{app.log()}",
        lambda: time.sleep(0.2),
    )


def wait_until_counted(app: App, total: int) -> None:
    """Until every input below `total` has an output."""
    until(
        lambda: counted(app.broker.bootstrap) == set(range(total)),
        lambda: f"every input below {total} counted; app log:\n{app.log()}",
        lambda: time.sleep(0.3),
    )


def assert_counted_from_restored_state(app: App, total: int, restarted_at: int) -> None:
    """Every input below `total` counted (some may count twice: see the module docstring), each key's last result
    at least the whole count, and the first results after the restart carry on from the restored table rather than
    from zero."""
    got, want = outputs(app.broker.bootstrap, TOPICS.sink), expected(total)
    for key, results in want.items():
        assert got[key][-1]["seq"] >= results[-1]["seq"], app.log()
        assert got[key][-1]["sum"] >= results[-1]["sum"], app.log()
        after = [r["seq"] for r in got[key] if r["n"] >= restarted_at]
        assert min(after) > restarted_at // 4 - 20, f"{key}: the table was not restored ({min(after)})"


@pytest.mark.parametrize("app", ["at-least-once"], indirect=True)
def test_the_table_is_restored_from_its_compacted_changelog(app: App) -> None:
    bootstrap = app.broker.bootstrap
    app.start()
    wait_until_ready(app, 1)
    produce_numbers(bootstrap, TOPICS.source, 0, 2000)
    wait_until_counted(app, 2000)
    assert_compacted(app.broker, TOPICS.changelog, STATE_KEYS)
    app.stop()

    app.start()  # the table is in memory: all it knows comes from the cleaned changelog
    wait_until_ready(app, 2)
    produce_numbers(bootstrap, TOPICS.source, 2000, 400)
    wait_until_counted(app, 2400)
    app.stop()
    assert_counted_from_restored_state(app, 2400, 2000)


@pytest.mark.parametrize("app", ["at-least-once"], indirect=True)
def test_the_app_carries_on_across_a_broker_restart(app: App) -> None:
    """The broker keeps the app's group (members, generation, assignment) across its restart, as Kafka does in
    `__consumer_offsets`: the app reconnects and carries on with its partitions and its table, without a rebalance
    or a recovery, so each input is counted exactly once."""
    bootstrap = app.broker.bootstrap
    app.start()
    wait_until_ready(app, 1)
    produce_numbers(bootstrap, TOPICS.source, 0, 1000)
    wait_until_counted(app, 1000)
    app.broker.restart()  # SIGTERM, then the same data and port: the app's next request finds the new process
    produce_numbers(bootstrap, TOPICS.source, 1000, 1000)
    wait_until_counted(app, 2000)
    app.stop()
    assert app.log_path.read_text().count(READY) == 1, f"the app recovered again; app log:\n{app.log()}"
    assert results(bootstrap) == expected(2000), app.log()
    assert_compacted(app.broker, TOPICS.changelog, STATE_KEYS)
