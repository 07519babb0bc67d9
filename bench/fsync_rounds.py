"""What the fsync rounds of an acks=all produce row cost: whether a slow round waited on the disk or computed more.

    .venv/bin/python -m bench.fsync_rounds [--rounds 3] [--records 200000] [--size 1024] [--partitions 8]

Each round starts `kafkalite serve` twice, `--fsync always` then `--fsync never` (console on, for `/metrics`), sends
a 20,000-record warm-up and then `--records` records with one confluent-kafka producer as the bench's produce rows
do (acks=all, `linger.ms=5`, round-robin over the partitions), and prints for each: msg/s, the broker's CPU per
message, and from `/metrics` the group-commit fsync rounds of the timed part (`kafkalite_log_flush_seconds` and
`kafkalite_log_flush_batch_appends`): how many, their mean duration and the mean appends each made durable.
"""

from __future__ import annotations

import argparse
import re
import time
import urllib.request
import uuid

from bench.brokers import _process, console_url, kafkalite_argv
from bench.clients import KafkaClient

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


def one(fsync: str, records: int, size: int, partitions: int) -> str:
    with _process(f"fsync-{fsync}", "kafka", kafkalite_argv(fsync, http=True), READY) as running:
        url = console_url(running)
        if url is None:
            raise SystemExit("the broker printed no console address")
        topic = f"rounds-{uuid.uuid4().hex[:8]}"
        running.create_topic(topic, partitions)
        client = KafkaClient(running.bootstrap)
        payload = b"x" * size
        client.produce(topic, partitions, payload, WARM_UP, "all", time.perf_counter() + 120)
        flushes, cpu = _flush_figures(url), running.cpu_seconds()
        began = time.perf_counter()
        produced = client.produce(topic, partitions, payload, records, "all", time.perf_counter() + 300)
        seconds = time.perf_counter() - began
        cpu = running.cpu_seconds() - cpu
        after = _flush_figures(url)
    count, total_s, appends = (after[name] - flushes[name] for name in FLUSH_FIGURES)
    done = max(1, produced.acknowledged)
    line = f"fsync={fsync}: {done / seconds:,.0f} msg/s, broker {cpu / done * 1e6:.2f} µs/msg"
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
    args = parser.parse_args()
    for number in range(args.rounds):
        for fsync in ("always", "never"):
            print(f"round {number + 1} " + one(fsync, args.records, args.size, args.partitions), flush=True)


if __name__ == "__main__":
    main()
