"""Instructions the broker executes per one-record Produce request: a count, not a time, so a noisy machine does
not move it.

    .venv/bin/python -m bench.request_instructions [--requests 1000] [--baseline DIR ...]

Runs `kafkalite serve` under `valgrind --tool=callgrind` twice per form: once answering only a warm-up record, once
also answering `--requests` Produce requests of one 100 B record each, sent one at a time (produce, then flush) by
confluent-kafka with `linger.ms=0`. The difference between the two totals, divided by the request count, is what
one request costs, with start-up and shutdown cancelled out. Forms: this tree as built (compiled where the build
compiled the protocol modules), this tree with `KAFKALITE_PURE_PYTHON=1`, and each `--baseline` source tree (e.g.
`git archive <commit> | tar -x -C DIR`, which runs as Python). Needs Debian's `valgrind`.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import confluent_kafka

HERE = Path(__file__).resolve().parent.parent
TOPIC = "request-instructions"


def count_instructions(env: dict[str, str], requests: int) -> int:
    """Callgrind's total for one broker life that answered `requests` one-record Produce requests after a warm-up."""
    with tempfile.TemporaryDirectory(prefix="kl-instructions-") as scratch:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        out = Path(scratch) / "callgrind.out"
        serve = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m", "kafkalite.cli"]
        serve += ["serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(Path(scratch) / "data")]
        serve += ["--fsync", "never", "--log-level", "WARNING", "--no-http"]
        broker = subprocess.Popen(
            serve, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            assert broker.stdout is not None
            if "ready" not in broker.stdout.readline():
                raise RuntimeError("kafkalite serve did not start under valgrind")
            producer = confluent_kafka.Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 0, "acks": 1})
            producer.produce(TOPIC, b"warm-up", partition=0)
            producer.flush(60)
            for _ in range(requests):
                producer.produce(TOPIC, bytes(100), partition=0)
                producer.flush(60)
        finally:
            broker.terminate()
            broker.wait(120)
        found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise RuntimeError(f"no instruction total in {out}")
        return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another source tree")
    args = parser.parse_args()
    forms = {"this tree, as built": {}, "this tree, KAFKALITE_PURE_PYTHON=1": {"KAFKALITE_PURE_PYTHON": "1"}}
    for tree in args.baseline:
        forms[tree.name] = {"PYTHONPATH": str(tree.resolve() / "src")}
    print(f"| form | instructions per one-record Produce request ({args.requests:,} requests) |")
    print("|---|---:|")
    for name, env in forms.items():
        per_request = (count_instructions(env, args.requests) - count_instructions(env, 0)) / args.requests
        print(f"| {name} | {per_request:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
