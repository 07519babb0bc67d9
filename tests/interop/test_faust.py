"""A stateful faust application (faust-streaming) against `kafkalite serve`: its table's compacted changelog, restores
across app and broker restarts, at-least-once and exactly-once.

`faust_app.py` (a real `faust.App` worker, in its own process) does the job of `quix_app.py`: a per-key running count
and sum, kept in a table whose changelog topic faust creates compacted and restores the table from at every start
(the table lives in memory). faust runs its own partition assignor inside the classic group protocol and commits its
offsets every 20 inputs; with `exactly_once` it runs a transactional producer per source partition (aiokafka's
transactions: the changelog writes and the offsets, through AddOffsetsToTxn and TxnOffsetCommit). The broker
compacts the changelog while the app works (`stream_apps.BROKER_ARGS`). Checked, for both guarantees:
* every output is right (for a key's i-th input: seq i and the sum of its first i values);
* the changelog is `cleanup.policy=compact`, and after thousands of updates of its four keys holds a handful of
  records in a few segments;
* a restarted app restores its table from the cleaned changelog (across the gaps cleaning leaves and, with
  exactly-once, transaction markers) and goes on counting where it stopped;
* after the broker restarts under it, the app reconnects, rejoins its group (membership is not kept across a
  restart), restores its table from the restarted broker and goes on: exactly with exactly-once, and with
  at-least-once counting again the inputs after its last offset commit.

Inputs are sent once the app says "Worker ready", never while it recovers. faust 0.15 has races of its own there
and on a crash, seen while writing these tests, with the broker's answers checked in the logs:
* inputs already fetched when its recovery seeks back to the committed offset may be skipped (1 run in 4 with 400
  inputs waiting at start: the offsets after the first commit were never processed);
* `exactly_once` commits a transaction's input offsets ahead of table updates still in its producer buffer (in
  every transaction of a run, the committed offset led the committed changelog by up to a dozen inputs; each
  transaction's commit or abort was the same in the changelog and in `__consumer_offsets`), so a kill -9 loses the
  updates of inputs it had already committed, whatever the broker. Outputs to a topic outside faust's topology are
  sent without a transaction.
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
    wait_for_outputs,
)

if (
    apps_python("faust") is None
):  # `make test` builds .venv-apps (the `apps` extra); by hand: `make .venv-apps/.installed`
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


def wait_until_ready(app: App, times: int) -> None:
    """Until the app has finished its `times`-th recovery (its log says so once per assignment)."""
    until(
        lambda: app.log_path.read_text().count(READY) >= times,
        f"the app's recovery number {times}; app log:\n{app.log()}",
        lambda: time.sleep(0.2),
    )


@pytest.mark.parametrize("app", ["at-least-once", "exactly-once"], indirect=True)
def test_the_table_is_restored_from_its_compacted_changelog(app: App) -> None:
    bootstrap = app.broker.bootstrap
    app.start()
    wait_until_ready(app, 1)
    produce_numbers(bootstrap, TOPICS.source, 0, 2000)
    wait_for_outputs(app, TOPICS.sink, 2000)
    assert_compacted(app.broker, TOPICS.changelog, STATE_KEYS)
    app.stop()
    assert outputs(bootstrap, TOPICS.sink) == expected(2000), app.log()

    app.start()  # the table is in memory: all it knows comes from the cleaned changelog
    wait_until_ready(app, 2)
    produce_numbers(bootstrap, TOPICS.source, 2000, 400)
    wait_for_outputs(app, TOPICS.sink, 2400)
    app.stop()
    assert outputs(bootstrap, TOPICS.sink) == expected(2400), app.log()


@pytest.mark.parametrize("app", ["at-least-once", "exactly-once"], indirect=True)
def test_the_app_carries_on_across_a_broker_restart(app: App) -> None:
    """KafkaLite does not keep a classic group's members across a restart (Apache Kafka does, in
    `__consumer_offsets`), so the app's next commit fails, it rejoins and restores its table. With exactly-once the
    count goes on exact. With at-least-once the inputs after its last offset commit are counted again (their table
    updates were written before the restart): nothing is lost, some are counted twice."""
    bootstrap = app.broker.bootstrap
    app.start()
    wait_until_ready(app, 1)
    produce_numbers(bootstrap, TOPICS.source, 0, 1000)
    wait_for_outputs(app, TOPICS.sink, 1000)
    app.broker.restart()  # SIGTERM, then the same data and port: the app's next request finds the new process
    wait_until_ready(app, 2)  # it rejoined its group and restored its table from the restarted broker
    produce_numbers(bootstrap, TOPICS.source, 1000, 1000)
    want = {key: results[-1] for key, results in expected(2000).items()}
    until(
        lambda: all(results[-1]["seq"] >= want[key]["seq"] for key, results in outputs(bootstrap, TOPICS.sink).items()),
        f"every input counted; app log:\n{app.log()}",
        lambda: time.sleep(0.3),
    )
    app.stop()
    got = outputs(bootstrap, TOPICS.sink)
    if app.guarantee == "exactly-once":
        assert got == expected(2000), app.log()
    else:
        assert all(got[key][-1]["sum"] >= want[key]["sum"] for key in want), (got, want)
    assert_compacted(app.broker, TOPICS.changelog, STATE_KEYS)
