"""What a Produce request costs the broker when it finds the broker asleep, against when requests are queued.

    .venv/bin/python -m bench.wakeup_cost [--records 570] [--requests 3000] [--rounds 3] [--baseline DIR ...]

librdkafka sends each partition's batch as its own Produce request as soon as it is ready, so at 100 B the broker of
the peers table's produce rows gets requests of about 570 records (57 KB), and between them it may have nothing to
do and sleep in `epoll_wait`. Two measurements say what that costs:

1. **This machine's wake-up.** One byte bounced over a socket pair between two processes, 20,000 times, both pinned
   to one CPU and then to two different CPUs: the round trip, and the CPU time each side spends per round trip
   (a `poll`, a `recv` and a `send` each time, and the kernel's work to put the process to sleep and wake it).
2. **The broker's CPU per request, one at a time or pipelined.** `kafkalite serve --fsync never` from this tree (and
   from each `--baseline` source tree), a topic of 8 partitions, and one raw connection that sends Produce requests
   (v10, acks=1, one batch of `--records` 100 B records for one partition each, the partitions in turn, as
   librdkafka sends them). Every answer is read and checked.
   - **one at a time**: each request is sent when the answer to the one before has arrived, so the broker has
     nothing to do between them and mostly sleeps until the next one comes;
   - **pipelined**: 8 requests in flight, so the next request is usually queued in the socket when the broker
     finishes one, and one read can bring in several.
   The broker's user + system CPU time over the requests (`/proc/<pid>/stat`), per request and per message, and, to
   show how the two modes differ, its `read` and `write` calls (socket and log together, `/proc/<pid>/io`: this
   counts the socket calls of uvloop, which `kafkalite serve` runs on when it is installed, not the `recv`/`send` of
   asyncio's own loop) and its voluntary context switches (times it slept) per request. The two modes alternate, in
   a different order each round.

The request bytes and the appends are the same in both modes. One at a time, the broker sleeps before every request
and gives each its own read, write and turn of the event loop; pipelined, it rarely sleeps, and one read and one
write serve several requests.

Medians over rounds, with min–max. The CPU time counts in the kernel's 10 ms clock ticks: the report gives what one
tick is per request, so that a difference smaller than that is not read into.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader

from bench.brokers import Running, baseline_peer
from bench.machine import process_cpu_seconds
from bench.wire import produce_frame
from kafkalite.protocol.records import RecordToWrite, build_batch

HERE = Path(__file__).resolve().parent.parent
TOPIC = "wakeup-cost"
PARTITIONS = 8
PRODUCE = 0
PRODUCE_VERSION = 10
IN_FLIGHT = 8  # pipelined mode
PING_PONGS = 20_000
SOCKET_TIMEOUT_S = 30.0
CLOCK_TICK_S = 1 / os.sysconf("SC_CLK_TCK")
MODES = {"one at a time": 1, "pipelined": IN_FLIGHT}
MAX_MESSAGE_BYTES = 1_048_588  # the broker's default max.message.bytes, as Kafka's


# --- 1. the machine ---------------------------------------------------------------------------------------------


def ping_pong(cpus: tuple[int, int], count: int = PING_PONGS) -> tuple[float, float, float]:
    """(round trip µs, this side's CPU µs per round trip, the other side's), the two processes pinned to `cpus`."""
    assert threading.active_count() == 1, "fork with one thread only: a child of a threaded process may deadlock"
    here, there = socket.socketpair()
    for end in (here, there):  # both sides alike: with a timeout, each recv() waits in poll() as the broker does
        end.settimeout(SOCKET_TIMEOUT_S)
    previous = os.sched_getaffinity(0)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        here.close()
        status = 1
        try:
            os.sched_setaffinity(0, {cpus[1]})
            for _ in range(count):
                if not there.recv(1):
                    break
                there.sendall(b"y")
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    there.close()
    try:
        os.sched_setaffinity(0, {cpus[0]})
        here.sendall(b"x")  # the child is running and pinned before the clock starts
        if not here.recv(1):
            raise RuntimeError("the ping-pong's other process ended before it began")
        began, cpu_began = time.perf_counter(), time.process_time()
        for _ in range(count - 1):
            here.sendall(b"x")
            if not here.recv(1):
                raise RuntimeError("the ping-pong's other process ended early")
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    finally:
        os.sched_setaffinity(0, previous)
        here.close()  # a child still waiting in recv() sees the end of the stream and exits
        _, status, usage = os.wait4(child, 0)
    if status != 0:
        raise RuntimeError(f"the ping-pong's other process failed (wait status {status})")
    rounds = count - 1  # the child's CPU covers one round trip more than the timed ones: negligible at this count
    return elapsed / rounds * 1e6, cpu / rounds * 1e6, (usage.ru_utime + usage.ru_stime) / count * 1e6


# --- 2. the broker ----------------------------------------------------------------------------------------------


def _batch(records: int) -> bytes:
    return bytes(build_batch([RecordToWrite(bytes(100)) for _ in range(records)], now_ms=int(time.time() * 1000)))


def produce_frames(records: int) -> list[bytes]:
    """One Produce request frame (size prefix included) per partition, each a batch of `records` 100 B records with
    acks=1; `send` sets each copy's correlation id."""
    batch = _batch(records)
    return [produce_frame(TOPIC, {partition: batch}, PRODUCE_VERSION, 0) for partition in range(PARTITIONS)]


def _with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    # size (4) · api key (2) · api version (2) · correlation id (4) · ...
    return frame[:8] + struct.pack(">i", correlation_id) + frame[12:]


def send(address: tuple[str, int], frames: list[bytes], requests: int, in_flight: int) -> None:
    """`requests` Produce requests over one connection, at most `in_flight` unanswered; every answer is read in order
    and checked (its correlation id, and no error). Raises on a wrong answer, a closed connection or a 30 s silence."""
    response_type = load_response_schema(PRODUCE, PRODUCE_VERSION)
    read = entity_reader(response_type)
    header_size = 4 + response_type.__header_schema__.__version__

    with socket.create_connection(address, timeout=SOCKET_TIMEOUT_S) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        incoming = sock.makefile("rb", buffering=1 << 16)

        def answer(expected: int) -> None:
            head = incoming.read(4)
            if len(head) < 4:
                raise RuntimeError(f"the broker closed the connection before answer {expected}")
            (size,) = struct.unpack(">i", head)
            frame = incoming.read(size)
            if len(frame) < size:
                raise RuntimeError(f"the broker closed the connection in the middle of answer {expected}")
            (correlation_id,) = struct.unpack_from(">i", frame)
            response, _ = read(frame, header_size)
            error_code = response.responses[0].partition_responses[0].error_code
            if correlation_id != expected or error_code != 0:
                raise RuntimeError(f"answer {expected}: correlation id {correlation_id}, error code {error_code}")

        for n in range(requests):
            if n >= in_flight:
                answer(n - in_flight)
            sock.sendall(_with_correlation_id(frames[n % PARTITIONS], n))
        for n in range(max(0, requests - in_flight), requests):
            answer(n)


def _broker_counts(pid: int) -> tuple[float, int, int, int]:
    """(CPU seconds, read calls, write calls, voluntary context switches) of process `pid` so far, all threads."""
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                switches += int(line.split()[1])
    return process_cpu_seconds(pid), int(io["syscr"]), int(io["syscw"]), switches


def broker_cost(
    running: Running, frames: list[bytes], records: int, requests: int, order: list[str]
) -> dict[str, tuple[float, ...]]:
    """{mode: (CPU µs per request, CPU µs per message, reads, writes and sleeps per request)}, the modes in `order`;
    `frames` are `produce_frames(records)`."""
    assert running.pid is not None
    costs = {}
    for mode in order:
        before = _broker_counts(running.pid)
        send(running.host_port, frames, requests, MODES[mode])
        after = _broker_counts(running.pid)
        cpu, reads, writes, sleeps = (a - b for a, b in zip(after, before, strict=True))
        per = 1 / requests
        costs[mode] = (cpu * per * 1e6, cpu / (requests * records) * 1e6, reads * per, writes * per, sleeps * per)
    return costs


# --- the report -------------------------------------------------------------------------------------------------


def _summary(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=570, help="100 B records per Produce request")
    parser.add_argument("--requests", type=int, default=3000, help="Produce requests per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another source tree")
    args = parser.parse_args()
    if args.records < 1 or args.requests < 1 or args.rounds < 1:
        parser.error("--records, --requests and --rounds must be at least 1")
    for tree in args.baseline:
        if not (tree / "src" / "kafkalite").is_dir():
            parser.error(f"--baseline {tree}: no src/kafkalite under it")
    batch_bytes = len(_batch(args.records))
    if batch_bytes > MAX_MESSAGE_BYTES:
        parser.error(
            f"--records {args.records} makes a batch of {batch_bytes:,} bytes, over the broker's default "
            f"max.message.bytes ({MAX_MESSAGE_BYTES:,})"
        )
    frames = produce_frames(args.records)
    cpus = sorted(os.sched_getaffinity(0))
    rounds = f"{args.rounds} round{'s' * (args.rounds > 1)}"

    placements = {"one CPU": (cpus[0], cpus[0])}
    if len(cpus) > 1:
        placements["two CPUs"] = (cpus[0], cpus[1])
    bounces: dict[str, list[tuple[float, float, float]]] = {name: [] for name in placements}
    for _ in range(args.rounds):
        for name, pair in placements.items():
            bounces[name].append(ping_pong(pair))
    print(f"One byte bounced between two processes, {PING_PONGS:,} times; medians of {rounds} (min–max)")
    print("| placement | round trip (µs) | CPU per round trip, one side (µs) | the other side (µs) |")
    print("|---|---:|---:|---:|")
    for name, rows in bounces.items():
        cells = [_summary(list(column), 1) for column in zip(*rows, strict=True)]
        print(f"| {name} | " + " | ".join(cells) + " |")

    sources = {"this tree": HERE, **{path.name: path.resolve() for path in args.baseline}}
    samples: dict[str, list[tuple[float, ...]]] = {}
    for round_number in range(args.rounds):
        order = list(MODES) if round_number % 2 == 0 else list(reversed(MODES))
        for name, source in sources.items():
            with baseline_peer(source, "never").start() as running:
                running.create_topic(TOPIC, PARTITIONS)
                send(running.host_port, frames, 500, IN_FLIGHT)  # warm-up: the segment files open, the code runs
                for mode, figures in broker_cost(running, frames, args.records, args.requests, order).items():
                    samples.setdefault(f"{name}, {mode}", []).append(figures)
                    print(f"round {round_number + 1} · {name}, {mode}: {figures[0]:.0f} µs", file=sys.stderr)
    tick_us = CLOCK_TICK_S / args.requests * 1e6
    print(
        f"\nThe broker's CPU per Produce request of {args.records} × 100 B, {args.requests:,} requests a mode; "
        f"medians of {rounds} (min–max); one clock tick is {tick_us:.1f} µs per request"
    )
    print(
        "| broker, mode | CPU per request (µs) | CPU per message (µs) | reads per request | writes per request "
        "| sleeps per request |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, rows in samples.items():
        columns: list[Any] = list(zip(*rows, strict=True))
        cells = [_summary(list(columns[0]), 0), _summary(list(columns[1]), 3)]
        cells += [_summary(list(column), 2) for column in columns[2:]]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
