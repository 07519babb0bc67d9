"""What the fsync rounds of an acks=all produce row cost: whether a slow round waited on the disk or computed more.

    .venv/bin/python -m bench.fsync_rounds [--rounds 3] [--records 200000] [--size 1024] [--partitions 8]
                                           [--rate MSG_S [--seconds 5]] [--baseline DIR ...]

Each round starts `kafkalite serve` with `--fsync always`, then each `--baseline` source tree the same way (`git
archive <commit>` unpacked, with its compiled modules when it has them), then this tree with `--fsync never` (console
on, for `/metrics`). Each sends a 20,000-record warm-up and then `--records` records with one confluent-kafka
producer as the bench's produce rows do (acks=all, `linger.ms=5`, round-robin over the partitions), and prints: msg/s,
the broker's CPU per message, and from `/metrics` the group-commit fsync rounds of the timed part
(`kafkalite_log_flush_seconds` and `kafkalite_log_flush_batch_appends`): how many, their mean duration and the mean
appends each made durable. With `--rate`, the load is the bench's "acks=all answered" row instead (100 B records at
that rate for `--seconds`, `linger.ms=0`, after a one-second warm-up of the same), and the line starts with the
answers' p50 and p99.
"""

from __future__ import annotations

import argparse
import re
import time
import urllib.request
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from bench.brokers import Running, _process, baseline_peer, console_url, kafkalite_argv
from bench.clients import KafkaClient, answer_ages

READY = r"^KafkaLite ready on"
WARM_UP = 20_000
FLUSH_FIGURES = (
    "kafkalite_log_flush_seconds_count",
    "kafkalite_log_flush_seconds_sum",
    "kafkalite_log_flush_batch_appends_sum",
)


def _flush_figures(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "metrics", timeout=30) as response:
        text = response.read().decode()
    figures = {}
    for name in FLUSH_FIGURES:
        found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
        figures[name] = float(found.group(1)) if found else 0.0
    return figures


Start = Callable[[], AbstractContextManager[Running]]


def this_tree(fsync: str) -> Start:
    """`kafkalite serve` of this tree, console on (for `/metrics`)."""
    return lambda: _process(f"fsync-{fsync}", "kafka", kafkalite_argv(fsync, http=True), READY)


def one(label: str, start: Start, args: argparse.Namespace) -> str:
    partitions = args.partitions
    with start() as running:
        url = console_url(running)
        if url is None:
            raise SystemExit("the broker printed no console address")
        topic = f"rounds-{uuid.uuid4().hex[:8]}"
        running.create_topic(topic, partitions)
        client = KafkaClient(running.bootstrap)
        payload = b"x" * args.size
        line = f"{label}: "
        if args.rate:
            answer_ages(running.bootstrap, topic, partitions, args.rate, 1.0, "all", time.monotonic() + 60)
        else:
            client.produce(topic, partitions, payload, WARM_UP, "all", time.perf_counter() + 120)
        flushes, cpu = _flush_figures(url), running.cpu_seconds()
        began = time.perf_counter()
        if args.rate:
            answered = answer_ages(
                running.bootstrap, topic, partitions, args.rate, args.seconds, "all", time.monotonic() + 120
            )
            done = max(1, len(answered.ages_ns))
            ages = sorted(answered.ages_ns)
            line += f"p50 {ages[len(ages) // 2] / 1e6:.2f} ms, p99 {ages[int(len(ages) * 0.99)] / 1e6:.2f} ms, "
        else:
            done = max(1, client.produce(topic, partitions, payload, args.records, "all", began + 300).acknowledged)
        seconds = time.perf_counter() - began
        cpu = running.cpu_seconds() - cpu
        after = _flush_figures(url)
    count, total_s, appends = (after[name] - flushes[name] for name in FLUSH_FIGURES)
    line += f"{done / seconds:,.0f} msg/s, broker {cpu / done * 1e6:.2f} µs/msg"
    if count:
        line += f"; {count:,.0f} fsync rounds, mean {total_s / count * 1000:.2f} ms, {appends / count:.1f} appends each"
        line += f", {total_s / seconds:.0%} of the time with a round under way (summed over partitions)"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rate", type=int, default=0, help="msg/s: the acks=all answered row's load instead")
    parser.add_argument("--seconds", type=float, default=5.0, help="with --rate: how long the timed load runs")
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another source tree (repeatable)")
    args = parser.parse_args()
    if args.rate:
        args.size = 100
    forms = [("fsync=always", this_tree("always"))]
    forms += [(f"{tree.name} fsync=always", baseline_peer(tree).start) for tree in args.baseline]
    forms.append(("fsync=never", this_tree("never")))
    for number in range(args.rounds):
        for label, start in forms:
            print(f"round {number + 1} " + one(label, start, args), flush=True)


if __name__ == "__main__":
    main()
