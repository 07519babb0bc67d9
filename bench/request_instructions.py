"""Instructions the broker executes per one-record Produce request, and per record a caught-up consumer reads: a
count, not a time, so a noisy machine does not move it.

    .venv/bin/python -m bench.request_instructions [--requests 1000] [--consume] [--start] [--baseline DIR ...]

Runs `kafkalite serve` under `valgrind --tool=callgrind` twice per form: once answering only a warm-up record, once
also answering `--requests` Produce requests of one 100 B record each, sent one at a time (produce, then flush) by
confluent-kafka with `linger.ms=0`. The difference between the two totals, divided by the request count, is what
one request costs, with start-up and shutdown cancelled out. With `--consume`, a confluent-kafka consumer assigned
to the partition reads each record before the next is produced, so each one costs a Produce request and the Fetch
that carries it to the consumer, the end-to-end row's traffic (its `fetch.wait.max.ms` is 5 s, so that long polls
ending empty are rare in either life). Forms: this tree as built (compiled where the build compiled the protocol
modules), this tree with `KAFKALITE_PURE_PYTHON=1`, and each `--baseline` source tree (e.g. `git archive <commit> |
tar -x -C DIR`, which runs as Python; one with its modules built in place runs compiled). Needs Debian's
`valgrind`.

With `--start`, each form's broker is stopped (SIGTERM) as soon as it prints its ready line, and the table gives the
whole life's total: what a `kafkalite serve` start costs (imports, recovery of an empty data directory, binding) plus
its clean stop, as a count.
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


def count_instructions(env: dict[str, str], requests: int | None, *, consume: bool = False) -> int:
    """Callgrind's total for one broker life that answered `requests` one-record Produce requests after a warm-up
    (with `consume`, and the Fetch requests of a consumer that reads each record before the next is sent); with
    `requests` None, of a life stopped at its ready line."""
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
            if requests is not None:  # None: stopped at the ready line
                bootstrap = f"127.0.0.1:{port}"
                producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
                producer.produce(TOPIC, b"warm-up", partition=0)
                producer.flush(60)
                consumer = _caught_up_consumer(bootstrap) if consume else None
                for _ in range(requests):
                    producer.produce(TOPIC, bytes(100), partition=0)
                    producer.flush(60)
                    if consumer is not None:
                        _read_one(consumer)
                if consumer is not None:
                    consumer.close()
                del producer  # destroyed now, before the broker stops: no reconnection attempts logged after it
        finally:
            broker.terminate()
            broker.wait(120)
        found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise RuntimeError(f"no instruction total in {out}")
        return int(found.group(1))


def _caught_up_consumer(bootstrap: str) -> confluent_kafka.Consumer:
    """A consumer of the partition that has read the warm-up record, so its next Fetch waits for the next append."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "request-instructions",
            "fetch.wait.max.ms": 5000,
            "enable.auto.commit": False,  # commits every 5 s would add requests in proportion to the run's length
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
    _read_one(consumer)
    return consumer


def _read_one(consumer: confluent_kafka.Consumer) -> None:
    message = consumer.poll(120)  # a record takes a few milliseconds under valgrind; none in two minutes is a failure
    if message is None:
        raise RuntimeError("the consumer read nothing in 120 s")
    if message.error() is not None:
        raise RuntimeError(f"the consumer failed: {message.error()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--consume", action="store_true", help="each record also read by a caught-up consumer")
    parser.add_argument(
        "--start", action="store_true", help="a life stopped at its ready line, whole (--requests is not used)"
    )
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another source tree")
    args = parser.parse_args()
    if args.start and args.consume:
        parser.error("--start counts a life that answers no request: it takes no --consume")
    forms = {"this tree, as built": {}, "this tree, KAFKALITE_PURE_PYTHON=1": {"KAFKALITE_PURE_PYTHON": "1"}}
    for tree in args.baseline:
        forms[tree.name] = {"PYTHONPATH": str(tree.resolve() / "src")}
    if args.start:
        print("| form | instructions from spawn to the ready line, and a clean stop |")
        print("|---|---:|")
        for name, env in forms.items():
            print(f"| {name} | {count_instructions(env, None):,} |", flush=True)
        return
    what = "record produced and consumed" if args.consume else "one-record Produce request"
    print(f"| form | instructions per {what} ({args.requests:,} records) |")
    print("|---|---:|")
    for name, env in forms.items():
        counts = [count_instructions(env, n, consume=args.consume) for n in (args.requests, 0)]
        per_request = (counts[0] - counts[1]) / args.requests
        print(f"| {name} | {per_request:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
