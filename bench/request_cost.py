"""What one small Produce request costs the broker, and what that does to latency near saturation.

    .venv/bin/python -m bench.request_cost [--rate 10000] [--seconds 8] [--rounds 3] [--fsync never]
                                           [--engine file] [--baseline DIR ...]

The end-to-end row of `python -m bench` sends 100 B records at a fixed rate with `linger.ms=0`, so nearly every
record is its own Produce request; it measures the broker's cost per request more than anything else. This runs the
same traffic against `kafkalite serve` from this tree and from each `--baseline` source tree (e.g. `git archive
<commit> | tar -x -C DIR`), alternating within each round, and reports per broker:

- the producer's acknowledgement latency (produce() to delivery report: the broker's answer, no consumer involved)
  and the end-to-end latency (produce() to a consumer in another process seeing the record), p50 and p99;
- the broker process's CPU share over the sending window (user + system, all its threads; 100% = one core);
- how long the main threads of the broker, the sender and the receiver were runnable but waiting for a CPU over the
  window (schedstat in proc(5)), as a share of it: on a host with fewer cores than busy threads, the time a queue
  of requests grows while the broker cannot run;
- Produce requests per second and records per request, from librdkafka's statistics.

`--engine memory` serves from memory (`--data-dir memory`) instead of files, so a file engine's tail can be told from
the host's.

A broker whose CPU share nears 100% at this rate is at saturation: queues form and the p99 runs away, so a few
percent of cost per request decide the tail. Medians over rounds; the machine is shared, so compare within a run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import confluent_kafka

from bench.machine import process_cpu_seconds, start_schedule

HERE = Path(__file__).resolve().parent.parent
TOPIC = "request-cost"
PADDING = bytes(92)  # 8-byte send time + 92 = 100 B records, as the end-to-end row sends


def _receive(port: int, count: int, out: Any) -> None:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "request-cost", "enable.auto.commit": False}
    )
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
    ages: list[int] = []
    deadline = time.monotonic() + 120
    while len(ages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.05)
        if message is None or message.error() is not None:
            continue
        sent_ns = int.from_bytes((message.value() or b"")[:8], "big")
        if sent_ns:
            ages.append(time.monotonic_ns() - sent_ns)
    consumer.close()
    out.put(ages)


def _percentile_ms(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


def measure(source: Path, fsync: str, rate: int, seconds: float, engine: str = "file") -> dict[str, float]:
    """One run against `kafkalite serve` from `source`/src, storing in files or (`engine` "memory") in memory."""
    with tempfile.TemporaryDirectory(prefix="kl-request-cost-") as data:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        serve = [sys.executable, "-m", "kafkalite.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
        serve += ["--data-dir", "memory" if engine == "memory" else data, "--fsync", fsync]
        serve += ["--log-level", "WARNING", "--no-http"]
        broker = subprocess.Popen(
            serve, env={**os.environ, "PYTHONPATH": str(source / "src")}, stdout=subprocess.PIPE, text=True
        )
        try:
            assert broker.stdout is not None
            if "ready" not in broker.stdout.readline():
                raise RuntimeError(f"kafkalite serve from {source} did not start")
            return _drive(broker.pid, port, rate, seconds)
        finally:
            broker.terminate()
            broker.wait(30)


def _drive(pid: int, port: int, rate: int, seconds: float) -> dict[str, float]:
    acked: list[int] = []
    stats: list[str] = []

    def on_delivery(error: Any, message: Any) -> None:
        value = message.value() or b""
        if error is None and len(value) == 100:
            acked.append(time.monotonic_ns() - int.from_bytes(value[:8], "big"))

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "linger.ms": 0,
            "acks": "1",
            "on_delivery": on_delivery,
            "statistics.interval.ms": 500,
            "stats_cb": stats.append,
        }
    )
    producer.produce(TOPIC, b"warm-up", partition=0)
    producer.flush(30)
    count = int(rate * seconds)
    spawn = multiprocessing.get_context("spawn")
    out = spawn.Queue()
    receiver = spawn.Process(target=_receive, args=(port, count, out))
    receiver.start()
    time.sleep(2)  # the consumer connected and positioned
    cpu_began = process_cpu_seconds(pid)
    main_threads = {"broker": pid, "sender": os.getpid(), "receiver": receiver.pid or 0}
    waited = {name: start_schedule(thread).waiting for name, thread in main_threads.items()}
    began = time.perf_counter()
    sent = 0
    while sent < count:
        due = min(count, int((time.perf_counter() - began) * rate) + 1)
        for _ in range(due - sent):
            producer.produce(TOPIC, time.monotonic_ns().to_bytes(8, "big") + PADDING, partition=0)
        producer.poll(0)
        sent = due
        time.sleep(max(0.0, began + sent / rate - time.perf_counter()))
    window_s = time.perf_counter() - began
    cpu_s = process_cpu_seconds(pid) - cpu_began
    waited = {name: start_schedule(main_threads[name]).waiting - before for name, before in waited.items()}
    producer.flush(60)
    ages: list[int] = out.get(timeout=180)
    receiver.join(10)
    final = json.loads(stats[-1]) if stats else {}
    requests = sum(b["tx"] for b in final.get("brokers", {}).values() if b.get("nodeid", -1) >= 0)
    if len(ages) < count or len(acked) < count:
        raise RuntimeError(f"{len(acked)} acknowledged and {len(ages)} consumed of {count}")
    return {
        "ack p50 (ms)": _percentile_ms(acked, 0.5),
        "ack p99 (ms)": _percentile_ms(acked, 0.99),
        "end-to-end p50 (ms)": _percentile_ms(ages, 0.5),
        "end-to-end p99 (ms)": _percentile_ms(ages, 0.99),
        "broker CPU (%)": 100 * cpu_s / window_s,
        **{f"{name} main thread waiting for a CPU (%)": 100 * s / window_s for name, s in waited.items()},
        "records per request": final.get("txmsgs", 0) / max(1, requests),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=10_000, help="records per second")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fsync", choices=("always", "never"), default="never")
    parser.add_argument("--engine", choices=("file", "memory"), default="file", help="memory: --data-dir memory")
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another source tree")
    args = parser.parse_args()
    sources = {"this tree": HERE, **{f"{path.name}": path.resolve() for path in args.baseline}}
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in sources}
    for round_number in range(1, args.rounds + 1):
        for name, source in sources.items():
            result = measure(source, args.fsync, args.rate, args.seconds, args.engine)
            for metric, value in result.items():
                samples[name].setdefault(metric, []).append(value)
            shown = ", ".join(f"{metric} {value:.2f}" for metric, value in result.items())
            print(f"round {round_number} · {name}: {shown}", file=sys.stderr, flush=True)
    metrics = list(next(iter(samples.values())))
    stored = "in memory" if args.engine == "memory" else f"fsync={args.fsync}"
    print(f"\n{args.rate:,} records/s of 100 B, linger.ms=0, acks=1, {stored}; medians of {args.rounds}")
    print("| metric | " + " | ".join(sources) + " |")
    print("|---|" + "---:|" * len(sources))
    for metric in metrics:
        cells = []
        for name in sources:
            values = samples[name][metric]
            cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})")
        print(f"| {metric} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
