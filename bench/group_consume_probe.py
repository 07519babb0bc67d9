"""The group consume row taken apart: its consumer with any setting changed, and the Fetch answers behind it.

    .venv/bin/python -m bench.group_consume_probe [--peers kafkalite-nofsync,tansu] [--rounds 3]
        [--set fetch.wait.max.ms=500 ...] [--answers]

Each round, for each peer (alternating), fills a new 8-partition topic with 1,000,000 × 100 B (acks=1, as the row
does), then reads it with the row's group consumer (`bench.clients.GROUP_CONSUMER_SETTINGS`, each `--set KEY=VALUE`
replacing one; `--set KEY=default` leaves KEY at librdkafka's default) and prints:
- msg/s, as the row counts it (from the poll that returned the first records to the last record);
- the longest wait between two polls that returned records: a consumer that stalled shows it here;
- the consumer's CPU per message (this process's, both the Python loop and librdkafka's threads; for the mock,
  whose threads live in this process too, its own CPU is taken out) and the broker's.
Medians per peer follow.

`--answers` prints, per peer, what the broker answers to the first three raw Fetch requests of the 8 partitions from
offset 0 (Fetch v11, `partition_max_bytes` 1 MiB, `max_bytes` 50 MiB, as librdkafka asks): bytes and records per
partition; and how long it holds a Fetch of the 8 partitions at their end (`max_wait` 500 ms), against one with
records on one partition.
"""

from __future__ import annotations

import argparse
import resource
import socket
import statistics
import time
import uuid
from typing import Any

from bench import wire
from bench.brokers import PEERS, Running
from bench.clients import GROUP_CONSUMER_SETTINGS, KafkaClient

RECORDS = 1_000_000
PARTITIONS = 8
TIMEOUT_S = 120.0


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _settings(changes: list[str]) -> dict[str, object]:
    settings = dict(GROUP_CONSUMER_SETTINGS)
    for change in changes:
        key, sep, value = change.partition("=")
        if not sep:
            raise SystemExit(f"--set takes KEY=VALUE, not {change!r}")
        if value == "default":
            settings.pop(key, None)
        else:
            settings[key] = value
    return settings


def _fill(running: Running) -> tuple[str, int]:
    topic = f"probe-{uuid.uuid4().hex[:8]}"
    running.create_topic(topic, PARTITIONS)
    filled = KafkaClient(running.bootstrap).produce(
        topic, PARTITIONS, b"x" * 100, RECORDS, "1", time.perf_counter() + TIMEOUT_S
    )
    return topic, filled.acknowledged


def read_once(running: Running, settings: dict[str, object]) -> dict[str, float]:
    topic, filled = _fill(running)
    client = KafkaClient(running.bootstrap)
    own, broker = _own_cpu_s(), running.cpu_seconds()
    consumed = client.consume_with(topic, PARTITIONS, filled, time.perf_counter() + TIMEOUT_S, settings)
    own, broker = _own_cpu_s() - own, running.cpu_seconds() - broker
    if running.pid is None:  # the mock runs on threads of this process: its CPU is in ours
        own -= broker
    if consumed.count == 0 or consumed.reading_s <= 0:
        raise SystemExit(f"{running.peer}: nothing read ({consumed.first_error})")
    return {
        "msg/s": consumed.count / consumed.reading_s,
        "longest gap ms": consumed.longest_gap_s * 1000,
        "consumer µs/msg": own / consumed.count * 1e6,
        "broker µs/msg": broker / consumed.count * 1e6,
        "records": consumed.count,
    }


def _fetch(sock: socket.socket, incoming: Any, topic: str, offsets: list[int], correlation_id: int) -> Any:
    sock.sendall(wire.fetch_frame(topic, offsets, correlation_id))
    return wire.read_fetch_answer(incoming)


def show_answers(running: Running) -> None:
    topic, _ = _fill(running)
    host, port = running.host_port
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        incoming = sock.makefile("rb")
        offsets = [0] * PARTITIONS
        for number in range(3):
            response = _fetch(sock, incoming, topic, offsets, number + 1)
            parts = []
            for partition in response.responses[0].partitions:
                if partition.error_code:  # the mock answers OFFSET_OUT_OF_RANGE once it dropped offset 0
                    parts.append(f"p{partition.partition_index} error {int(partition.error_code)}")
                    continue
                records = partition.records or b""
                count, _, next_offset = wire.whole_batches(records)
                if next_offset >= 0:
                    offsets[partition.partition_index] = next_offset
                parts.append(f"p{partition.partition_index} {len(records) / 1024:,.0f} KiB/{count:,}")
            print(f"  {running.peer}: answer {number + 1}: {', '.join(parts)}", flush=True)
        ends = [int(partition.high_watermark) for partition in response.responses[0].partitions]
        for label, asked in (("all 8 at their end", ends), ("one with records", [0, *ends[1:]])):
            began = time.perf_counter()
            _fetch(sock, incoming, topic, asked, 10)
            print(f"  {running.peer}: Fetch of {label}: answered in {(time.perf_counter() - began) * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default="kafkalite-nofsync,tansu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--answers", action="store_true", help="also show the raw Fetch answers")
    args = parser.parse_args()
    peers = {peer.name: peer for peer in PEERS}
    chosen = [peers[name] for name in args.peers.split(",")]
    if any(peer.wire != "kafka" for peer in chosen):
        raise SystemExit("only Kafka-protocol peers have a group consumer")
    settings = _settings(args.set)
    print(f"consumer settings: {settings}", flush=True)
    if args.answers:
        for peer in chosen:
            with peer.start() as running:
                show_answers(running)
    results: dict[str, list[dict[str, float]]] = {peer.name: [] for peer in chosen}
    for number in range(args.rounds):
        for peer in chosen:
            with peer.start() as running:
                figures = read_once(running, settings)
            results[peer.name].append(figures)
            shown = ", ".join(f"{key} {value:,.2f}" for key, value in figures.items() if key != "records")
            print(f"round {number + 1} {peer.name}: {shown}, {figures['records']:,.0f} records", flush=True)
    print("medians:")
    for name, rounds in results.items():
        keys = [key for key in rounds[0] if key != "records"]
        medians = {key: statistics.median(figures[key] for figures in rounds) for key in keys}
        print(f"  {name}: " + ", ".join(f"{key} {value:,.2f}" for key, value in medians.items()))


if __name__ == "__main__":
    main()
