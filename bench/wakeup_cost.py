"""What a request costs the broker when it has to wake for it, against one that is already waiting.

    .venv/bin/python -m bench.wakeup_cost [--records 570] [--requests 3000] [--rounds 3] [--baseline DIR]

librdkafka sends each partition's batch as its own Produce request as soon as it is ready, so at 100 B the broker of
the peers table's produce rows gets one request of about 570 records (57 KB) at a time, answers it, and waits in the
kernel for the next. Two measurements say what that wait costs:

1. **This machine's wake-up.** One byte bounced over a socket pair between two processes, 20,000 times, both on one
   CPU and on two different CPUs: the round trip, and the CPU each side spends per round trip. That CPU is the
   kernel's (and the hypervisor's) work to put a process to sleep and wake it, none of it the program's.
2. **The broker's CPU per request, asleep before each one or not.** `kafkalite serve --fsync never` from this tree
   (and from each `--baseline` source tree), a topic of 8 partitions, and one raw connection that sends Produce
   requests (v10, acks=1, one batch of `--records` 100 B records for one partition each, the partitions in turn,
   as librdkafka sends them):
   - **one at a time**: each request is sent when the answer to the one before has arrived, so the broker is
     asleep in `epoll_wait` when each request comes;
   - **pipelined**: 8 requests in flight, so the next request is already in the socket when the broker finishes one.
   The broker's user + system CPU time over the requests (`/proc/<pid>/stat`, 10 ms ticks), per request and per
   message. The two modes alternate within each round.

Medians over rounds, with min–max. The broker does the same work for the same bytes in both modes; what the first
costs beyond the second is what sleeping and waking for every request costs it.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader

from bench.machine import process_cpu_seconds
from bench.wire import encode_frame
from kafkalite.protocol.messages import build
from kafkalite.protocol.records import RecordToWrite, build_batch

HERE = Path(__file__).resolve().parent.parent
TOPIC = "wakeup-cost"
PARTITIONS = 8
PRODUCE_VERSION = 10
IN_FLIGHT = 8  # pipelined mode
PING_PONGS = 20_000


# --- 1. the machine ---------------------------------------------------------------------------------------------


def _bounce(sock: socket.socket, count: int) -> None:
    for _ in range(count):
        sock.recv(1)
        sock.sendall(b"y")


def ping_pong(cpus: tuple[int, int], count: int = PING_PONGS) -> tuple[float, float, float]:
    """(round trip µs, this side's CPU µs per round trip, the other side's), the two processes pinned to `cpus`."""
    here, there = socket.socketpair()
    previous = os.sched_getaffinity(0)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        try:
            os.sched_setaffinity(0, {cpus[1]})
            _bounce(there, count)
        finally:
            os._exit(0)
    try:
        os.sched_setaffinity(0, {cpus[0]})
        here.sendall(b"x")  # the child is running and pinned before the clock starts
        here.recv(1)
        began, cpu_began = time.perf_counter(), time.process_time()
        for _ in range(count - 1):
            here.sendall(b"x")
            here.recv(1)
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    finally:
        os.sched_setaffinity(0, previous)
        _, _, usage = os.wait4(child, 0)
        here.close()
        there.close()
    # the child's CPU covers one round trip more than the timed ones: negligible at this count
    rounds = count - 1
    return elapsed / rounds * 1e6, cpu / rounds * 1e6, (usage.ru_utime + usage.ru_stime) / count * 1e6


# --- 2. the broker ----------------------------------------------------------------------------------------------


def produce_frames(records: int) -> list[bytes]:
    """One Produce request body per partition (size prefix and correlation id patched per send): a batch of
    `records` 100 B records, acks=1."""
    module = sys.modules[load_request_schema(0, PRODUCE_VERSION).__module__]
    batch = build_batch([RecordToWrite(bytes(100)) for _ in range(records)], now_ms=int(time.time() * 1000))
    frames = []
    for partition in range(PARTITIONS):
        data = [build(module.PartitionProduceData, {"index": partition, "records": batch})]
        topic = build(module.TopicProduceData, {"name": TOPIC, "partition_data": data})
        body = build(
            load_request_schema(0, PRODUCE_VERSION),
            {"transactional_id": None, "acks": 1, "timeout": 30_000, "topic_data": [topic]},
        )
        frames.append(encode_frame(0, PRODUCE_VERSION, 0, body))
    return frames


def _error_code(api_key: int, version: int, answer: bytes) -> int:
    """The error code of the first partition or topic of a Produce or CreateTopics answer (without its size)."""
    response_type = load_response_schema(api_key, version)
    response, _ = entity_reader(response_type)(answer, 4 + response_type.__header_schema__.__version__)
    if api_key == 0:
        return int(response.responses[0].partition_responses[0].error_code)
    return int(response.topics[0].error_code)


def _with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    # size (4) · api key (2) · api version (2) · correlation id (4) · ...
    return frame[:8] + struct.pack(">i", correlation_id) + frame[12:]


def send(port: int, frames: list[bytes], requests: int, in_flight: int) -> None:
    """`requests` Produce requests over one connection, at most `in_flight` unanswered; every answer checked."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        room = threading.Semaphore(in_flight)
        failures: list[str] = []

        def read_answers() -> None:
            stream = sock.makefile("rb", buffering=1 << 20)
            for expected in range(requests):
                head = stream.read(8)
                if len(head) < 8:
                    failures.append(f"the connection closed after {expected} answers")
                    return
                size, correlation_id = struct.unpack(">ii", head)
                error_code = _error_code(0, PRODUCE_VERSION, head[4:] + stream.read(size - 4))
                if correlation_id != expected or error_code != 0:
                    failures.append(f"answer {expected}: correlation id {correlation_id}, error code {error_code}")
                    return
                room.release()

        reader = threading.Thread(target=read_answers)
        reader.start()
        for n in range(requests):
            while not room.acquire(timeout=1):
                if not reader.is_alive():
                    break
            if failures:
                break
            sock.sendall(_with_correlation_id(frames[n % PARTITIONS], n))
        reader.join()
        if failures:
            raise RuntimeError(failures[0])


def _serve(source: Path, data: str) -> tuple[subprocess.Popen[str], int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = [sys.executable, "-m", "kafkalite.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    serve += ["--data-dir", data, "--fsync", "never", "--log-level", "WARNING", "--no-http"]
    broker = subprocess.Popen(
        serve, env={**os.environ, "PYTHONPATH": str(source / "src")}, stdout=subprocess.PIPE, text=True
    )
    assert broker.stdout is not None
    if "ready" not in broker.stdout.readline():
        broker.kill()
        raise RuntimeError(f"kafkalite serve from {source} did not start")
    return broker, port


def _create_topic(port: int) -> None:
    module = sys.modules[load_request_schema(19, 4).__module__]
    topic = build(
        module.CreatableTopic,
        {"name": TOPIC, "num_partitions": PARTITIONS, "replication_factor": 1, "assignments": (), "configs": ()},
    )
    body = build(load_request_schema(19, 4), {"topics": [topic], "timeout_ms": 30_000})
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(encode_frame(19, 4, 1, body))
        stream = sock.makefile("rb")
        (size,) = struct.unpack(">i", stream.read(4))
        error_code = _error_code(19, 4, stream.read(size))
    if error_code != 0:
        raise RuntimeError(f"CreateTopics answered error code {error_code}")


def broker_cost(source: Path, records: int, requests: int) -> dict[str, tuple[float, float]]:
    """{mode: (broker CPU µs per request, per message)} for one broker from `source`, both modes."""
    frames = produce_frames(records)
    with tempfile.TemporaryDirectory(prefix="kl-wakeup-cost-") as data:
        broker, port = _serve(source, data)
        try:
            _create_topic(port)
            send(port, frames, 500, IN_FLIGHT)  # warm-up: the segment files open, the code paths run
            costs = {}
            for mode, in_flight in (("one at a time", 1), ("pipelined", IN_FLIGHT)):
                began = process_cpu_seconds(broker.pid)
                send(port, frames, requests, in_flight)
                cpu = process_cpu_seconds(broker.pid) - began
                costs[mode] = (cpu / requests * 1e6, cpu / (requests * records) * 1e6)
            return costs
        finally:
            broker.terminate()
            broker.wait(30)


# --- the report -------------------------------------------------------------------------------------------------


def _summary(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def _rounds(count: int, run: Callable[[], dict[str, tuple[float, ...]]]) -> dict[str, list[tuple[float, ...]]]:
    results: dict[str, list[tuple[float, ...]]] = {}
    for _ in range(count):
        for name, figures in run().items():
            results.setdefault(name, []).append(figures)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=570, help="100 B records per Produce request")
    parser.add_argument("--requests", type=int, default=3000, help="Produce requests per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--baseline", type=Path, action="append", default=[], help="also a broker from this source tree"
    )
    args = parser.parse_args()
    if args.records < 1 or args.requests < 1 or args.rounds < 1:
        parser.error("--records, --requests and --rounds must be at least 1")
    cpus = sorted(os.sched_getaffinity(0))

    print(f"1. one byte bounced between two processes, {PING_PONGS:,} times, {args.rounds} rounds")
    placements = {"one CPU": (cpus[0], cpus[0])}
    if len(cpus) > 1:
        placements["two CPUs"] = (cpus[0], cpus[1])
    bounces = _rounds(args.rounds, lambda: {name: ping_pong(pair) for name, pair in placements.items()})
    for name, rows in bounces.items():
        trips, here, there = zip(*rows, strict=True)
        print(
            f"   {name:<9} round trip {_summary(list(trips), 1)} µs; CPU per round trip "
            f"{_summary(list(here), 1)} µs on one side, {_summary(list(there), 1)} µs on the other"
        )

    trees = {"this tree": HERE, **{str(tree): tree for tree in args.baseline}}
    print(
        f"2. the broker's CPU per Produce request of {args.records} × 100 B ({args.requests:,} requests a mode, "
        f"{args.rounds} rounds)"
    )

    def one_round() -> dict[str, tuple[float, ...]]:
        figures: dict[str, tuple[float, ...]] = {}
        for tree, source in trees.items():
            for mode, costs in broker_cost(source, args.records, args.requests).items():
                figures[f"{tree}, {mode}"] = costs
        return figures

    for name, rows in _rounds(args.rounds, one_round).items():
        per_request, per_message = zip(*rows, strict=True)
        print(
            f"   {name:<30} {_summary(list(per_request), 0)} µs per request, "
            f"{_summary(list(per_message), 3)} µs per message"
        )


if __name__ == "__main__":
    main()
