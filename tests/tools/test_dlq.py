"""`kafkalite dlq list | show | replay` against KafkaLite served on the wire and against Tansu, output checked; bad
input and an unreachable broker end in one line on stderr and exit status 2."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import kafkalite
from interop.tansu import Tansu
from kafkalite.cli import main
from kafkalite.server.inprocess import run_in_thread
from ports import refusing_port


class PoisonError(ValueError):
    pass


@pytest.fixture(scope="module", params=["kafkalite", "tansu"])
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "kafkalite":
        with run_in_thread(fsync=False) as served:
            yield served.bootstrap
        return
    tansu = Tansu(Path(tmp_path_factory.mktemp("tansu")) / "tansu.log")
    try:
        yield tansu.bootstrap
    finally:
        tansu.stop()


def run(*args: str) -> Result:
    return CliRunner(env={"COLUMNS": "200"}).invoke(main, list(args), catch_exceptions=False, prog_name="kafkalite")


def ok(*args: str) -> Result:
    result = run(*args)
    assert result.exit_code == 0, f"kafkalite {shlex.join(args)} -> {result.exit_code}: {result.stderr}"
    return result


def seed(bootstrap: str, topic: str) -> None:
    """Two dead letters of `topic`: billing's handler failed on partition 1 offset 7; a producer gave up on 0."""

    async def write() -> None:
        async with kafkalite.connect(bootstrap) as cluster:
            await cluster.create_topic(topic, partitions=2)
            letters = cluster.dead_letters
            error = PoisonError("cannot bill order 7")
            await letters.send(topic, 1, b"k7", b"order-7", [("trace", b"t-7")], error, offset=7, group_id="billing")
            await letters.send(topic, 0, None, b"late", [], RuntimeError("partition full"), timestamp=1_700_000_000_000)

    asyncio.run(write())


def read_all(bootstrap: str, topic: str, count: int) -> list[kafkalite.Message]:
    """The first `count` records of `topic`, then a short look for any more (there must be none)."""

    async def read() -> list[kafkalite.Message]:
        async with kafkalite.connect(bootstrap) as cluster, cluster.consumer(topic, group_id=None) as consumer:
            found: list[kafkalite.Message] = []
            async with asyncio.timeout(30):
                while len(found) < count:
                    found += await consumer.getmany(timeout=0.2)
            return found + await consumer.getmany(timeout=0.3)

    return asyncio.run(read())


def test_list_show_and_replay(bootstrap: str, request: pytest.FixtureRequest) -> None:
    topic = f"orders-{request.node.callspec.id}"
    seed(bootstrap, topic)

    listed = ok("dlq", "list", "-b", bootstrap).stdout
    [row] = [line for line in listed.splitlines() if line.startswith(topic + " ")]
    assert row.split()[:4] == [topic, f"{topic}.DLQ", "2", "2"]
    [summary] = json.loads(ok("dlq", "list", topic, "-b", bootstrap, "--output", "json").stdout)
    assert summary["letters"] == 2
    assert summary["pending"] == 2
    assert summary["groups"] == {"(producer)": 1, "billing": 1}

    shown = ok("dlq", "show", topic, "-b", bootstrap).stdout.splitlines()
    assert shown[0].startswith(f"{topic}.DLQ 0:0  {topic}-0  from a producer  at ")
    assert shown[1] == "  builtins.RuntimeError: partition full"
    assert shown[2] == "  key=None value=late"
    assert shown[3].startswith(f"{topic}.DLQ 1:0  {topic}-1 offset 7  group billing  at 20")
    assert shown[4] == f"  {__name__}.PoisonError: cannot bill order 7"
    assert shown[5] == "  key=k7 value=order-7 headers: trace=t-7"
    letters = json.loads(ok("dlq", "show", topic, "-b", bootstrap, "--output", "json").stdout)
    assert [(d["partition"], d["offset"], d["group"], d["exception"]) for d in letters] == [
        (0, -1, None, "builtins.RuntimeError"),
        (1, 7, "billing", f"{__name__}.PoisonError"),
    ]
    assert letters[1]["headers"] == {"trace": "t-7"}
    assert letters[1]["dead_lettered_at"].endswith("Z")

    dry = ok("dlq", "replay", topic, "-b", bootstrap, "--dry-run").stdout
    assert f"{topic}.billing.retry-1" in dry
    assert f"{topic}-0" in dry
    assert dry.splitlines()[-1] == f"would replay 2 dead letter(s) of {topic}"
    assert ok("dlq", "replay", topic, "-b", bootstrap, "--dry-run").stdout == dry  # a dry run changes nothing

    billing = ok("dlq", "replay", topic, "-b", bootstrap, "--group", "billing").stdout
    assert billing.splitlines()[-1] == f"replayed 1 dead letter(s) of group billing of {topic}"
    rest = json.loads(ok("dlq", "replay", topic, "-b", bootstrap, "--output", "json").stdout)
    assert [(r["group"], r["to"]) for r in rest["replayed"]] == [(None, f"{topic}-0")]
    again = ok("dlq", "replay", topic, "-b", bootstrap).stdout
    assert again.splitlines()[-1] == f"replayed 0 dead letter(s) of {topic}"  # each letter once

    [retried] = read_all(bootstrap, f"{topic}.billing.retry", 1)
    assert (retried.partition, retried.key, retried.value, retried.headers) == (
        1,
        b"k7",
        b"order-7",
        (("trace", b"t-7"),),
    )
    [returned] = read_all(bootstrap, topic, 1)
    assert (returned.partition, returned.value) == (0, b"late")
    [row] = json.loads(ok("dlq", "list", topic, "-b", bootstrap, "--output", "json").stdout)
    assert (row["letters"], row["pending"]) == (2, 0)


def test_a_topic_without_dead_letters(bootstrap: str, request: pytest.FixtureRequest) -> None:
    topic = f"quiet-{request.node.callspec.id}"

    async def create() -> None:
        async with kafkalite.connect(bootstrap) as cluster:
            await cluster.create_topic(topic)

    asyncio.run(create())
    assert ok("dlq", "show", topic, "-b", bootstrap).stdout == f"no dead letters for {topic}\n"
    assert ok("dlq", "list", topic, "-b", bootstrap).stdout == f"no dead letters for {topic}\n"
    assert ok("dlq", "replay", topic, "-b", bootstrap).stdout == f"replayed 0 dead letter(s) of {topic}\n"


@pytest.mark.parametrize("command", ["show", "replay", "list"])
def test_an_unknown_topic_is_one_line_and_exit_2(bootstrap: str, command: str) -> None:
    result = run("dlq", command, "no-such-topic", "-b", bootstrap)
    assert result.exit_code == 2
    assert result.stderr == f"kafkalite: unknown topic 'no-such-topic' on {bootstrap} (and no no-such-topic.DLQ)\n"


@pytest.mark.parametrize("command", [["list"], ["show", "orders"], ["replay", "orders", "--dry-run"]])
def test_an_unreachable_broker_is_one_line_and_exit_2(command: list[str]) -> None:
    address = f"127.0.0.1:{refusing_port()}"
    result = run("dlq", *command, "-b", address, "--timeout", "2")
    assert result.exit_code == 2
    assert result.stderr == f"kafkalite: cannot connect to {address}: no broker answered\n"
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "-b", "nohost"], "kafkalite: bad bootstrap address 'nohost': expected HOST:PORT"),
        (["list", "-b", "host:99999"], "kafkalite: bad bootstrap address 'host:99999'"),
    ],
)
def test_bad_input_is_one_line_naming_the_culprit(args: list[str], message: str) -> None:
    result = run("dlq", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


def test_usage_errors_and_help() -> None:
    assert run("dlq", "show").exit_code == 2  # TOPIC is required
    assert "Missing argument 'TOPIC'" in run("dlq", "show").stderr
    helped = ok("dlq", "--help").stdout
    assert "kafkalite dlq replay orders --group billing" in helped
    assert "--dry-run" in ok("dlq", "replay", "--help").stdout
