"""Every program in `examples/` runs, as a user would run it (`python examples/NAME.py`), so none of them rots.

The embedded ones run alone; the ones that talk to a served broker get an in-process one on a free port through
`$KAFKA_BOOTSTRAP`, exactly as the examples page tells a user to provide it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kafkalite.server import ThreadedServer, run_in_thread

from .hooks import ROOT

EXAMPLES = ROOT / "examples"
TIMEOUT_S = 240


def run_example(name: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"{name} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture
def served() -> Iterator[ThreadedServer]:
    with run_in_thread() as server:
        yield server


def test_every_example_is_tested_here() -> None:
    tested = {"seed_story.py", "order_pipeline.py", "kafka_in_tests.py", "confluent_client.py", "aiokafka_client.py"}
    assert {path.name for path in EXAMPLES.glob("*.py")} == tested


def test_every_example_is_on_the_examples_page() -> None:
    page = (ROOT / "docs" / "getting-started" / "examples.md").read_text(encoding="utf-8")
    for path in EXAMPLES.glob("*.py"):
        assert f"python examples/{path.name}" in page, f"{path.name} is not listed in docs/getting-started/examples.md"


def test_seed_story() -> None:
    out = run_example("seed_story.py").stdout
    assert "produced 30 orders" in out
    assert "billing-2 leaves after billing" in out
    assert "billing billed 30" in out
    assert "after replaying 1 dead letter" in out
    assert "fulfillment shipped 30 (the replay went to billing alone)" in out


def test_order_pipeline() -> None:
    out = run_example("order_pipeline.py").stdout
    assert "validated and forwarded 16; dead-lettered 4:" in out
    assert out.count("is not a number") == 4
    assert "replayed 4 dead letters to orders.validator.retry" in out
    assert "payments: 20, total 337.50" in out


@pytest.mark.interop
def test_kafka_in_tests() -> None:
    out = run_example("kafka_in_tests.py").stdout
    assert "3 passed" in out


@pytest.mark.interop
def test_confluent_client(served: ThreadedServer) -> None:
    env = {"KAFKA_BOOTSTRAP": served.bootstrap}
    first = run_example("confluent_client.py", env).stdout
    assert "created topic greetings with 3 partitions" in first
    assert "sent 10 greetings" in first
    second = run_example("confluent_client.py", env).stdout
    assert "created topic" not in second
    first_run = re.search(r"run (\w+)", first)
    assert first_run is not None
    read_again = second.split("sent 10 greetings", 1)[1].split("committed offsets", 1)[0]
    assert "hello 0 from run" in read_again
    assert first_run[1] not in read_again, "the second run's consumer did not resume after the first run's commit"


@pytest.mark.interop
def test_aiokafka_client(served: ThreadedServer) -> None:
    out = run_example("aiokafka_client.py", {"KAFKA_BOOTSTRAP": served.bootstrap}).stdout
    assert "created topic sensor-readings with 2 partitions" in out
    assert "read this run's 20 readings and committed" in out
    assert "end offsets: 0=" in out
    again = run_example("aiokafka_client.py", {"KAFKA_BOOTSTRAP": served.bootstrap}).stdout
    assert "created topic" not in again  # the topic was there: nothing is claimed
    assert "read this run's 20 readings and committed" in again
