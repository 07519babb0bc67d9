"""A stateful quixstreams application against `kafkalite serve`: its compacted changelog, restores and exactly-once.

`quix_app.py` (a real `quixstreams.Application`, in its own process) keeps a per-key running count and sum in a
state store. quixstreams creates the store's changelog topic itself (CreateTopics with `cleanup.policy=compact`),
writes each checkpoint's state changes to it, and restores the store from it when the local state is gone. The broker
runs with small segments, a low dirty ratio and a short cleaner backoff (`stream_apps.BROKER_ARGS`), so the cleaner
compacts the changelog while the app works. Checked, for `at-least-once` and `exactly-once`:
* every output is right (for a key's i-th input: seq i and the sum of its first i values);
* the changelog is `cleanup.policy=compact` and, after thousands of updates of its eight state keys, its files stay
  within a few segments and it holds a handful of records;
* after a clean stop and the state directory removed, the restarted app restores its store from the cleaned
  changelog (across the offset gaps cleaning leaves and, with exactly-once, its transaction markers) and goes on
  counting where it stopped.
With exactly-once, the app is also killed with -9 in mid-stream (once keeping its state directory, once losing it)
and restarted: a read_committed consumer of the output sees each input's result exactly once.
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Serve
from .stream_apps import (
    BROKER_ARGS,
    App,
    Feeder,
    Topics,
    apps_python,
    assert_compacted,
    expected,
    outputs,
    produce_numbers,
    wait_for_outputs,
)

if apps_python() is None:  # `make test` builds .venv-apps (the `apps` extra); by hand: `make .venv-apps/.installed`
    pytest.skip("no interpreter with quixstreams: run `make .venv-apps/.installed`", allow_module_level=True)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

TOPICS = Topics("numbers", "sums", "changelog__summer--numbers--default")
STATE_KEYS = 8  # "seq" and "sum" of each of the 4 input keys


@pytest.fixture
def app(serve: Serve, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[App]:
    started = App(
        Path(__file__).with_name("quix_app.py"),
        serve(*BROKER_ARGS),
        tmp_path / "state",
        request.param,
        tmp_path / "app.log",
    )
    try:
        yield started
    finally:
        started.kill()


@pytest.mark.parametrize("app", ["at-least-once", "exactly-once"], indirect=True)
def test_state_is_restored_from_the_compacted_changelog(app: App) -> None:
    bootstrap = app.broker.bootstrap
    produce_numbers(bootstrap, TOPICS.source, 0, 2000)
    app.start()
    wait_for_outputs(app, TOPICS.sink, 2000)
    assert_compacted(app.broker, TOPICS.changelog, STATE_KEYS)
    app.stop()
    assert outputs(bootstrap, TOPICS.sink) == expected(2000), app.log()

    shutil.rmtree(app.state_dir)  # the restarted app can only restore its store from the changelog
    produce_numbers(bootstrap, TOPICS.source, 2000, 400)
    app.start()
    wait_for_outputs(app, TOPICS.sink, 2400)
    app.stop()
    assert outputs(bootstrap, TOPICS.sink) == expected(2400), app.log()
    assert "Recovery successful" in app.log_path.read_text()


@pytest.mark.parametrize("app", ["exactly-once"], indirect=True)
def test_exactly_once_survives_kill_9(app: App) -> None:
    bootstrap = app.broker.bootstrap
    feeder = Feeder(bootstrap, TOPICS.source, 0, 3000)  # inputs keep coming: each kill lands mid-work
    for done, keep_state in ((600, True), (1500, False)):
        app.start()
        wait_for_outputs(app, TOPICS.sink, done)
        app.stop(signal.SIGKILL)  # mid-work: its open transaction is aborted when the restarted app starts
        if not keep_state:
            shutil.rmtree(app.state_dir, ignore_errors=True)
    feeder.join()
    app.start()
    wait_for_outputs(app, TOPICS.sink, 3000)
    app.stop()
    assert outputs(bootstrap, TOPICS.sink) == expected(3000), app.log()
    assert_compacted(app.broker, TOPICS.changelog, STATE_KEYS)
