"""Time from pytest start to the first test using `kafkalite_server`, and that fixture's own set-up.

    python bench/pytest_fixture_bench.py [--runs 9]

Each run is a fresh `python -m pytest` process over a throwaway project holding one test. The clock starts just
before the process is spawned; a hook in the project's conftest notes when the test's set-up begins and ends and
when its body starts. Two projects, alternating run by run so machine load hits both alike:

- `plain`: the test uses no fixture: pytest's own floor on this machine (interpreter, plugins, collection);
- `server`: the test takes `kafka_bootstrap`, i.e. `kafkalite_server` (a KafkaLite broker served in-process on a
  free port) as a user's first test would.

Printed: medians (and min–max) of "spawn → first test body" for both, their difference, and the set-up time of the
`server` test's fixtures (the target is ≤ 0.3 s), wall clock and the process's CPU time over the same span (on a
machine shared with other work, wall time includes waiting for a core; CPU time does not). The plugin is loaded
from the installed package, through its `pytest11` entry point, exactly as in a user's environment.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = """
import json, os, time
import pytest

MARKS = {}

@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    MARKS["setup_start"] = time.time()
    MARKS["setup_cpu_start"] = time.process_time()
    try:
        return (yield)
    finally:
        MARKS["setup_end"] = time.time()
        MARKS["setup_cpu_end"] = time.process_time()

def pytest_sessionfinish(session):
    with open(os.environ["BENCH_OUT"], "w") as out:
        json.dump(MARKS, out)
"""

TESTS = {
    "plain": "import time\nfrom conftest import MARKS\n\ndef test_first():\n    MARKS['body'] = time.time()\n",
    "server": (
        "import time\nfrom conftest import MARKS\n\n"
        "def test_first(kafka_bootstrap):\n    MARKS['body'] = time.time()\n    assert kafka_bootstrap\n"
    ),
}


def one_run(project: Path, out: Path) -> dict[str, float]:
    env = {**os.environ, "BENCH_OUT": str(out)}
    env.pop("KAFKALITE_TEST_BOOTSTRAP", None)
    began = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"pytest failed in {project}:\n{done.stdout}\n{done.stderr}")
    marks = json.loads(out.read_text())
    return {
        "first_test_s": marks["body"] - began,
        "setup_s": marks["setup_end"] - marks["setup_start"],
        "setup_cpu_s": marks["setup_cpu_end"] - marks["setup_cpu_start"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in TESTS}
    with tempfile.TemporaryDirectory() as root:
        projects = {}
        for name, test in TESTS.items():
            project = Path(root) / name
            project.mkdir()
            (project / "conftest.py").write_text(CONFTEST)
            (project / "test_first.py").write_text(test)
            projects[name] = project
        one_run(projects["server"], Path(root) / "warm.json")  # untimed: bytecode caches written once
        for _ in range(args.runs):
            for name, project in projects.items():
                results[name].append(one_run(project, Path(root) / f"{name}.json"))

    def summary(name: str, key: str) -> str:
        values = [r[key] for r in results[name]]
        return f"{statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"

    plain = statistics.median(r["first_test_s"] for r in results["plain"])
    server = statistics.median(r["first_test_s"] for r in results["server"])
    print(f"runs: {args.runs} per project, alternating; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"spawn -> first test body, no fixture:        {summary('plain', 'first_test_s')}")
    print(f"spawn -> first test body, kafkalite_server:  {summary('server', 'first_test_s')}")
    print(f"difference of the medians:                   {server - plain:.3f} s")
    print(f"set-up of the kafkalite_server test:         {summary('server', 'setup_s')}")
    print(f"  of which CPU time (all threads):            {summary('server', 'setup_cpu_s')}")
    print(f"set-up of the plain test:                    {summary('plain', 'setup_s')}")


if __name__ == "__main__":
    main()
