"""`python -m bench.observability`: what the console and `/metrics` cost, against the same broker without them.

1. **Hot path.** Produce then consume throughput (confluent-kafka, fsync never) against three `kafkalite serve`
   processes started in turn, round after round (A B C, A B C, ...):
   - `base`: the code of a baseline revision (default `main`, exported with `git archive`), which has no counters;
   - `off`: this tree with `--no-http` (the counters run, nothing reads them);
   - `on`: this tree with the console listening and `/metrics` scraped every second during the run (Prometheus's
     default interval is 15 s, so this is 15 times harsher).
   Ratios on ÷ off and on ÷ base, medians over rounds.
   And the same broker in process (`--only embedded`): `Broker.produce` of a prepared batch and `Broker.fetch` of
   one batch, base against this tree, each in its own subprocess, alternating, timed in process CPU time (other
   work on a shared machine then disturbs it less than wall time): the counters' cost without sockets or a client
   in the measurement.
2. **Scrape time** of `/metrics` with `--partitions` partitions and `--groups` groups each committing offsets on
   `--group-partitions` partitions: the collector alone (in process) and the whole GET over HTTP. `--only scrape`
   measures this part alone (no big topic, no other page); `--only scrape-base` times the in-process scrape of
   this tree against `--base` (each in its own subprocess, ABBA order, `--rounds` rounds of `--repeat` scrapes).
3. **Console page load** for a topic of `--messages` records (one partition): every page of the console, timed over
   HTTP (server time plus localhost round trip), median of `--repeat` loads.

Prints one table; add the figures with this command line to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

READY = r"^KafkaLite ready on"


def _argv(python_path: str | None, *extra: str) -> Callable[[int, Path], list[str]]:
    from bench.brokers import HOST

    prefix = ["env", f"PYTHONPATH={python_path}"] if python_path else []

    def argv(port: int, data_dir: Path) -> list[str]:
        return [
            *prefix,
            *[sys.executable, "-m", "kafkalite.cli", "serve", "--host", HOST, "--port", str(port)],
            *["--data-dir", str(data_dir), "--fsync", "never", "--log-level", "WARNING", *extra],
        ]

    return argv


@contextlib.contextmanager
def _scraping(url: str, every_s: float) -> Iterator[list[float]]:
    """GET `url` every `every_s` on a thread while the block runs; yields the list of scrape durations."""
    stop = threading.Event()
    took: list[float] = []

    def run() -> None:
        while not stop.wait(every_s):
            began = time.perf_counter()
            with urllib.request.urlopen(url, timeout=30) as response:
                response.read()
            took.append(time.perf_counter() - began)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield took
    finally:
        stop.set()
        thread.join()


def hot_path(args: argparse.Namespace) -> None:
    from bench.brokers import _process, console_url  # the bench extras (redis, psutil...) come with it
    from bench.clients import KafkaClient

    base_src = Path(tempfile.mkdtemp(prefix="bench-base-"))
    subprocess.run(f"git archive {args.base} src | tar -x -C {base_src}", shell=True, check=True)
    subjects = {
        "base": _argv(str(base_src / "src")),
        "off": _argv(None, "--no-http"),
        "on": _argv(None, "--http-port", "0"),
    }
    produce: dict[str, list[float]] = {name: [] for name in subjects}
    consume: dict[str, list[float]] = {name: [] for name in subjects}
    payload = b"x" * args.size
    for rnd in range(args.rounds):
        for name, argv in subjects.items():
            with _process(f"obs-{name}", "kafka", argv, READY) as running:
                running.create_topic("hot", 3)
                client = KafkaClient(running.bootstrap)
                url = console_url(running)
                scraper = _scraping(url + "metrics", 1.0) if url else contextlib.nullcontext([])
                with scraper as scrapes:
                    produced = client.produce("hot", 3, payload, args.count, "1", time.monotonic() + 300)
                    consumed = client.consume("hot", 3, args.count, time.monotonic() + 300)
                assert produced.acknowledged == args.count, produced
                assert consumed.count == args.count, consumed
                produce[name].append(args.count / produced.seconds)
                consume[name].append(args.count / consumed.reading_s)
                note = f", {len(scrapes)} scrapes" if url else ""
                print(
                    f"round {rnd + 1} {name}: produce {produce[name][-1]:,.0f}/s consume {consume[name][-1]:,.0f}/s"
                    f"{note}",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"\n### Hot path: {args.count:,} records of {args.size} B, 3 partitions, acks=1, {args.rounds} rounds")
    print("| | base | off | on | on ÷ off | on ÷ base |\n|---|---|---|---|---|---|")
    for label, table in (("produce records/s", produce), ("consume records/s", consume)):
        med = {name: statistics.median(values) for name, values in table.items()}
        print(
            f"| {label} | {med['base']:,.0f} | {med['off']:,.0f} | {med['on']:,.0f} | "
            f"{med['on'] / med['off']:.3f} | {med['on'] / med['base']:.3f} |"
        )


_EMBEDDED = """
import asyncio, sys, time
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch

async def main(count):
    async with Broker(None, fsync=False) as broker:
        await broker.create_topic("hot", 1)
        batch = build_batch([RecordToWrite(b"x" * 100, b"k")] * 10, now_ms=1)
        began = time.process_time()
        for _ in range(count):
            await broker.produce("hot", 0, batch, acks=1)
        produced = time.process_time() - began
        began = time.process_time()
        for offset in range(0, count * 10, 10):  # one batch a call: a fetch per produce, as a tailing consumer
            broker.fetch("hot", 0, offset, len(batch))
        fetched = time.process_time() - began
        print(count / produced, count / fetched)

asyncio.run(main(int(sys.argv[1])))
"""


_SCRAPE = """
import asyncio, statistics, sys, time
from kafkalite.broker import Broker
from kafkalite.http.metrics import exposition, registry_for
from kafkalite.protocol.records import RecordToWrite, build_batch

async def main(partitions, groups, group_partitions, repeat):
    topics = max(1, partitions // 100)
    per_topic = partitions // topics
    async with Broker(None, fsync=False) as broker:
        for t in range(topics):
            await broker.create_topic(f"scraped-{t}", per_topic)
        batch = build_batch([RecordToWrite(b"v" * 100, b"k")] * 10, now_ms=int(time.time() * 1000))
        for t in range(topics):
            for p in range(per_topic):
                await broker.produce(f"scraped-{t}", p, batch, acks=1)
        for g in range(groups):
            commits = [
                (f"scraped-{(g + i) % topics}", (g * 7 + i) % per_topic, 5, "", -1) for i in range(group_partitions)
            ]
            await broker.offsets.commit_many(f"group-{g}", commits)
        registry = registry_for(broker)
        took = []
        for _ in range(repeat):
            began = time.perf_counter()
            exposition(registry)
            took.append(time.perf_counter() - began)
        print(statistics.median(took))

asyncio.run(main(*map(int, sys.argv[1:])))
"""


def scrape_against_base(args: argparse.Namespace) -> None:
    base_src = Path(tempfile.mkdtemp(prefix="bench-base-"))
    subprocess.run(f"git archive {args.base} src | tar -x -C {base_src}", shell=True, check=True)
    paths = {"base": str(base_src / "src"), "this": str(Path(__file__).resolve().parents[1] / "src")}
    medians: dict[str, list[float]] = {name: [] for name in paths}
    for rnd in range(args.rounds):
        order = list(paths.items()) if rnd % 2 == 0 else list(reversed(paths.items()))  # ABBA: no order bias
        for name, path in order:
            done = subprocess.run(
                [sys.executable, "-c", _SCRAPE]
                + [str(n) for n in (args.partitions, args.groups, args.group_partitions, args.repeat)],
                env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
                cwd=tempfile.gettempdir(),  # not the checkout: `-c` puts the working directory on sys.path
                capture_output=True,
                text=True,
                check=True,
            )
            medians[name].append(float(done.stdout))
            print(f"round {rnd + 1} {name}: median scrape {medians[name][-1] * 1000:.1f} ms", file=sys.stderr)
    base, this = statistics.median(medians["base"]), statistics.median(medians["this"])
    print(
        f"\n### /metrics in process, {args.partitions:,} partitions, {args.groups} groups × {args.group_partitions}: "
        f"{args.rounds} rounds of {args.repeat} scrapes"
    )
    print("| | base | this tree | base ÷ this |\n|---|---|---|---|")
    print(f"| median of round medians | {base * 1000:.1f} ms | {this * 1000:.1f} ms | {base / this:.2f} |")


def embedded(args: argparse.Namespace) -> None:
    base_src = Path(tempfile.mkdtemp(prefix="bench-base-"))
    subprocess.run(f"git archive {args.base} src | tar -x -C {base_src}", shell=True, check=True)
    paths = {"base": str(base_src / "src"), "this": str(Path(__file__).resolve().parents[1] / "src")}
    rates: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in paths}
    for rnd in range(args.rounds):
        order = list(paths.items()) if rnd % 2 == 0 else list(reversed(paths.items()))  # ABBA: no order bias
        for name, path in order:
            done = subprocess.run(
                [sys.executable, "-c", _EMBEDDED, str(args.count // 10)],
                env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                check=True,
            )
            produce_rate, fetch_rate = map(float, done.stdout.split())
            rates[name][0].append(produce_rate)
            rates[name][1].append(fetch_rate)
            print(
                f"round {rnd + 1} {name}: {produce_rate:,.0f} produces/s {fetch_rate:,.0f} fetches/s", file=sys.stderr
            )
    print(f"\n### In process: {args.count // 10:,} produces of a 10-record batch, then fetches, {args.rounds} rounds")
    print("| | base | this tree | this ÷ base (medians) | median of each round's this ÷ base |\n|---|---|---|---|---|")
    for label, index in (("Broker.produce calls/s", 0), ("Broker.fetch calls/s", 1)):
        base, this = statistics.median(rates["base"][index]), statistics.median(rates["this"][index])
        paired = statistics.median(t / b for t, b in zip(rates["this"][index], rates["base"][index], strict=True))
        print(f"| {label} | {base:,.0f} | {this:,.0f} | {this / base:.3f} | {paired:.3f} |")


async def _scrape_and_pages(args: argparse.Namespace) -> None:
    from prometheus_client import generate_latest

    from kafkalite.broker import Broker
    from kafkalite.http import HttpServer
    from kafkalite.http.metrics import exposition, registry_for
    from kafkalite.protocol.records import RecordToWrite, build_batch

    with tempfile.TemporaryDirectory(prefix="bench-obs-") as data_dir:
        async with Broker(data_dir, fsync=False) as broker:
            topics = max(1, args.partitions // 100)
            for t in range(topics):
                await broker.create_topic(f"scraped-{t}", args.partitions // topics)
            batch = build_batch([RecordToWrite(b"v" * 100, b"k")] * 10, now_ms=int(time.time() * 1000))
            for t in range(topics):
                for p in range(args.partitions // topics):
                    await broker.produce(f"scraped-{t}", p, batch, acks=1)
            for g in range(args.groups):
                commits = [
                    (f"scraped-{(g + i) % topics}", (g * 7 + i) % (args.partitions // topics), 5, "", -1)
                    for i in range(args.group_partitions)
                ]
                await broker.offsets.commit_many(f"group-{g}", commits)

            registry = registry_for(broker)
            collector: list[float] = []
            reference: list[float] = []  # prometheus-client's own writer over the same families, alternating
            for _ in range(args.repeat):
                began = time.perf_counter()
                body = exposition(registry)
                collector.append(time.perf_counter() - began)
                began = time.perf_counter()
                generate_latest(registry)
                reference.append(time.perf_counter() - began)
            series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
            if args.only == "scrape":
                async with HttpServer(broker, "127.0.0.1", 0) as http:
                    url = http.url + "metrics"

                    def scrape_all() -> list[float]:
                        took = []
                        for _ in range(args.repeat):
                            began = time.perf_counter()
                            with urllib.request.urlopen(url, timeout=60) as response:
                                response.read()
                            took.append(time.perf_counter() - began)
                        return took

                    over_http = await asyncio.to_thread(scrape_all)
                _print_scrape(args, series, collector, reference)
                print(
                    f"GET /metrics over HTTP: median {statistics.median(over_http) * 1000:.1f} ms "
                    f"(min {min(over_http) * 1000:.1f}, max {max(over_http) * 1000:.1f})"
                )
                return

            big = "big"
            await broker.create_topic(big, 1)
            records = build_batch(
                [RecordToWrite(b'{"n": %d, "text": "hello"}' % i, b"key-%d" % (i % 100)) for i in range(10_000)],
                now_ms=int(time.time() * 1000),
            )
            while broker.partition(big, 0).high_watermark < args.messages:
                await broker.produce(big, 0, records, acks=1)  # the same batch again: its base offset is patched
            await broker.offsets.commit("readers", big, 0, args.messages // 2)
            await broker.dead_letters.send(big, 0, b"k", b"v", [], ValueError("bad"))

            async with HttpServer(broker, "127.0.0.1", 0) as http:
                base = http.url.rstrip("/")
                middle = args.messages // 2
                pages = [
                    "/metrics",
                    "/",
                    "/topics",
                    f"/topics/{big}",
                    f"/topics/{big}/messages",
                    f"/topics/{big}/messages?offset={middle}&limit=200",
                    f"/topics/{big}/messages?time={int(time.time() * 1000) - 1}",
                    f"/topics/{big}/messages?filter=json&q=n%3D-1",
                    f"/topics/{big}/messages?filter=key&q=key-7&offset={middle}",
                    "/groups",
                    "/groups/readers",
                    "/dead-letters",
                    f"/dead-letters/{big}?preview=1",
                ]
                loads: dict[str, list[float]] = {page: [] for page in pages}

                def load_all() -> None:
                    for _ in range(args.repeat):
                        for page in pages:
                            began = time.perf_counter()
                            with urllib.request.urlopen(base + page, timeout=60) as response:
                                response.read()
                            loads[page].append(time.perf_counter() - began)

                await asyncio.to_thread(load_all)

    _print_scrape(args, series, collector, reference)
    print(f"\n### Console pages over HTTP, topic `{big}` of {args.messages:,} records, {args.repeat} loads each")
    print("| page | median ms | max ms |\n|---|---|---|")
    for page, took in loads.items():
        print(f"| `{page}` | {statistics.median(took) * 1000:.1f} | {max(took) * 1000:.1f} |")


def _print_scrape(args: argparse.Namespace, series: int, collector: list[float], reference: list[float]) -> None:
    print(
        f"\n### /metrics with {args.partitions:,} partitions and {args.groups} groups × {args.group_partitions} "
        f"committed partitions ({series:,} samples), {args.repeat} scrapes"
    )
    print(
        f"collector + exposition in process: median {statistics.median(collector) * 1000:.1f} ms "
        f"(min {min(collector) * 1000:.1f}, max {max(collector) * 1000:.1f})"
    )
    print(
        f"collector + prometheus-client's generate_latest, alternating with it: median "
        f"{statistics.median(reference) * 1000:.1f} ms (min {min(reference) * 1000:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--only", choices=["hot", "embedded", "pages", "scrape", "scrape-base"], help="run one part only"
    )
    parser.add_argument("--base", default="main", help="baseline revision for the hot path (git archive)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--group-partitions", type=int, default=10)
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    if args.only in (None, "hot"):
        hot_path(args)
    if args.only in (None, "embedded"):
        embedded(args)
    if args.only == "scrape-base":
        scrape_against_base(args)
    if args.only in (None, "pages", "scrape"):
        asyncio.run(_scrape_and_pages(args))


if __name__ == "__main__":
    main()
