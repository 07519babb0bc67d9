"""The workloads, written once against `bench.clients.Client` and run identically against every peer.

Each workload creates its own topics (unique names within a round), is bounded in records and in time (a deadline
of `Sizes.workload_timeout_s`; a run cut short by it says so in a note), and returns named metrics. Sizes come from
`QUICK` (a smoke run) or `FULL` (the published run).
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import psutil

from bench import embedded_bench
from bench.brokers import Running, Wire
from bench.clients import Client, Produced, answer_ages, client_for, consume_in_processes, produce_in_processes
from bench.machine import process_cpu_seconds
from bench.wire import raw_fetch, storm

KiB = 1024
BOTH: frozenset[Wire] = frozenset({"kafka", "redis"})
KAFKA: frozenset[Wire] = frozenset({"kafka"})


@dataclass(frozen=True)
class Sizes:
    mode: str
    rounds: int
    produce_small: int  # 100 B records per produce run
    produce_large: int  # 1 KiB records per produce run
    consume: int
    consume_large: int  # 1 KiB records read by kcat (the broker-bound consume rows)
    producer_processes: int  # client processes of the "N clients" produce and consume rows
    latency_s: float  # seconds of paced sending per rate
    rates: tuple[int, ...]
    answer_rate: int  # msg/s of the acks=all answer-latency row
    partition_counts: tuple[int, ...]
    records_per_partition: int
    connections: int
    embedded_records: int
    embedded_partitions: int
    workload_timeout_s: float
    idle_settle_s: float


FULL = Sizes(
    mode="full",
    rounds=3,
    produce_small=1_000_000,
    produce_large=200_000,
    consume=1_000_000,
    consume_large=500_000,
    producer_processes=4,
    latency_s=10.0,
    rates=(1_000, 10_000, 100_000),
    answer_rate=10_000,
    partition_counts=(1_000, 10_000),
    records_per_partition=10,
    connections=1_000,
    embedded_records=100_000,
    embedded_partitions=8,
    workload_timeout_s=60.0,
    idle_settle_s=1.0,
)
# The same workloads at smoke-test sizes: every code path, in a few minutes.
QUICK = dataclasses.replace(
    FULL,
    mode="quick",
    rounds=1,
    produce_small=20_000,
    produce_large=5_000,
    consume=20_000,
    consume_large=10_000,
    latency_s=1.0,
    records_per_partition=1,
    embedded_records=10_000,
    workload_timeout_s=30.0,
    idle_settle_s=0.3,
)


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    higher_is_better: bool


MSG_S = Metric("throughput", "msg/s", True)
MB_S = Metric("throughput", "MB/s", True)
FIRST_RECORD = Metric("subscribe → first message", "s", False)
P50 = Metric("p50", "ms", False)
P99 = Metric("p99", "ms", False)
READY = Metric("spawn → ready line", "s", False)
FIRST_METADATA = Metric("spawn → first metadata", "s", False)
IDLE_RSS = Metric("idle RSS", "MB", False)
READY_ON_CPU = Metric("to the ready line: main thread on a CPU", "s", False)
READY_WAITING = Metric("to the ready line: main thread waiting for a CPU", "s", False)
READY_NOT_RUNNING = Metric("to the ready line: main thread not running", "s", False)
READY_SYSTEM = Metric("to the ready line: kernel CPU of all threads", "s", False)
READY_DISK_READ = Metric("to the ready line: read from disk", "MB", False)
CREATE = Metric("create topic", "s", False)
SERVED = Metric("served", "%", True)
ALL_ANSWERED = Metric("all answered", "s", False)
PRODUCE_MSG_S = Metric("produce", "msg/s", True)
CONSUME_MSG_S = Metric("consume", "msg/s", True)
BROKER_CPU = Metric("broker CPU per message", "µs", False)
BROKER_CPU_SHARE = Metric("broker CPU while sending", "% of one core", False)
PROCESSES_CPU = Metric("sender, receiver and broker CPU while sending", "% of all cores", False)


@dataclass
class Outcome:
    values: dict[Metric, float]
    notes: list[str] = field(default_factory=list)


@dataclass
class Session:
    """One started peer within one round."""

    running: Running
    client: Client
    sizes: Sizes
    _names: itertools.count[int] = field(default_factory=itertools.count)

    def deadline(self) -> float:
        return time.perf_counter() + self.sizes.workload_timeout_s

    def new_topic(self, family: str, partitions: int) -> str:
        topic = f"bench-{family}-{next(self._names)}"
        self.running.create_topic(topic, partitions)
        return topic


def session_for(running: Running, sizes: Sizes) -> Session:
    return Session(running, client_for(running.wire, running.bootstrap), sizes)


@dataclass(frozen=True)
class Workload:
    family: str  # groups rows in the tables and plots
    label: str
    wires: frozenset[Wire]
    run: Callable[[Session], Outcome]


def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 1e6


class _BrokerCpu:
    """The broker's CPU time (user + system, every thread of its process; for the mock, the threads it runs on in
    the bench process) over a block, per message: what the broker itself spends on a row, whoever limits its
    throughput."""

    def __init__(self, running: Running) -> None:
        self._running = running
        self._began = running.cpu_seconds()

    def _used(self) -> float:
        return self._running.cpu_seconds() - self._began

    def add_to(self, values: dict[Metric, float], messages: int) -> None:
        """Put the CPU time since this object was made, per message, into `values`."""
        if messages > 0:
            values[BROKER_CPU] = self._used() / messages * 1e6

    def add_share_to(self, values: dict[Metric, float], seconds: float) -> None:
        """Put the CPU time since this object was made as a share of one core over `seconds` into `values`."""
        if seconds > 0:
            values[BROKER_CPU_SHARE] = self._used() / seconds * 100


class _ProcessesCpu:
    """The CPU time of a set of processes over a block, as a share of all the host's cores: for the end-to-end rows,
    the sender (this process, with the mock's threads when the mock is the broker), the receiver and the broker.

    (The host's own counters, `psutil.cpu_times()` from /proc/stat, were tried first: some rounds on this VM read
    the whole host less busy than the broker process alone, 0.4–1.5% against its 7–44% of one core.)"""

    def __init__(self, pids: list[int]) -> None:
        self._pids = pids
        self._began = self._seconds()
        self._began_at = time.perf_counter()

    def _seconds(self) -> float:
        return sum(process_cpu_seconds(pid) for pid in self._pids)

    def add_to(self, values: dict[Metric, float]) -> None:
        elapsed = time.perf_counter() - self._began_at
        if elapsed > 0:
            values[PROCESSES_CPU] = 100 * (self._seconds() - self._began) / (elapsed * (os.cpu_count() or 1))


def _shortfall(what: str, done: int, wanted: int, error: str | None) -> list[str]:
    if done >= wanted:
        return []
    return [f"{what}: {done:,} of {wanted:,} before the deadline" + (f" (first error: {error})" if error else "")]


def start_up(session: Session) -> Outcome:
    running = session.running
    values = {READY: running.ready_s, FIRST_METADATA: running.first_metadata_s}
    if (schedule := running.ready_schedule) is not None:  # where a slow start went: computing, queued, or neither
        not_running = max(0.0, running.ready_s - schedule.on_cpu - schedule.waiting)  # two clocks: never below zero
        values |= {
            READY_ON_CPU: schedule.on_cpu,
            READY_WAITING: schedule.waiting,
            READY_NOT_RUNNING: not_running,
            READY_SYSTEM: schedule.kernel,
        }
        if schedule.disk_read is not None:
            values[READY_DISK_READ] = schedule.disk_read
    if running.pid is not None:
        time.sleep(session.sizes.idle_settle_s)
        values[IDLE_RSS] = _rss_mb(running.pid)
    return Outcome(values)


def _rate(produced: Produced) -> float:
    if produced.acknowledged <= 0:
        raise RuntimeError(f"nothing acknowledged in {produced.seconds:.1f} s: {produced.first_error}")
    return produced.acknowledged / produced.seconds


def produce(size: int, partitions: int, acks: str, session: Session) -> Outcome:
    count = session.sizes.produce_small if size < KiB else session.sizes.produce_large
    topic = session.new_topic("produce", partitions)
    cpu = _BrokerCpu(session.running)
    produced = session.client.produce(topic, partitions, b"x" * size, count, acks, session.deadline())
    rate = _rate(produced)
    values = {MSG_S: rate, MB_S: rate * size / 1e6}
    cpu.add_to(values, produced.acknowledged)
    return Outcome(values, _shortfall("acknowledged", produced.acknowledged, count, produced.first_error))


def consume(partitions: int, session: Session) -> Outcome:
    count = session.sizes.consume
    topic = session.new_topic("consume", partitions)
    filled = session.client.produce(topic, partitions, b"x" * 100, count, "1", session.deadline())
    cpu = _BrokerCpu(session.running)
    consumed = session.client.consume(topic, partitions, filled.acknowledged, session.deadline())
    if consumed.first_record_s is None:
        raise RuntimeError(f"no message within {session.sizes.workload_timeout_s:.0f} s: {consumed.first_error}")
    values = {FIRST_RECORD: consumed.first_record_s}
    if consumed.reading_s > 0:
        values[MSG_S] = consumed.count / consumed.reading_s
        cpu.add_to(values, consumed.count)
    notes = _shortfall("prefilled", filled.acknowledged, count, filled.first_error)
    notes += _shortfall("consumed", consumed.count, filled.acknowledged, consumed.first_error)
    return Outcome(values, notes)


def produce_from_processes(size: int, partitions: int, acks: str, session: Session) -> Outcome:
    """The produce row with `producer_processes` confluent-kafka producers at once (one may saturate first)."""
    count = session.sizes.produce_small if size < KiB else session.sizes.produce_large
    topic = session.new_topic("produce", partitions)
    processes = session.sizes.producer_processes
    cpu = _BrokerCpu(session.running)
    produced = produce_in_processes(
        session.running.bootstrap, topic, partitions, b"x" * size, count, acks, processes,
        session.sizes.workload_timeout_s,
    )  # fmt: skip
    rate = _rate(produced)
    values = {MSG_S: rate, MB_S: rate * size / 1e6}
    cpu.add_to(values, produced.acknowledged)
    return Outcome(
        values, _shortfall("acknowledged", produced.acknowledged, count // processes * processes, produced.first_error)
    )


def consume_from_processes(size: int, partitions: int, session: Session) -> Outcome:
    """Fill a topic (acks=1, not timed), then read it all with `producer_processes` consumers counting whole batches:
    the broker's fetch path, not the Python side of one client."""
    count = session.sizes.consume if size < KiB else session.sizes.consume_large
    topic = session.new_topic("consume", partitions)
    filled = session.client.produce(topic, partitions, b"x" * size, count, "1", session.deadline())
    cpu = _BrokerCpu(session.running)
    consumed = consume_in_processes(
        session.running.bootstrap, topic, partitions, session.sizes.producer_processes, filled.acknowledged,
        session.sizes.workload_timeout_s,
    )  # fmt: skip
    if consumed.reading_s <= 0:
        raise RuntimeError(f"nothing read: {consumed.first_error}")
    rate = consumed.count / consumed.reading_s
    values = {MSG_S: rate, MB_S: rate * size / 1e6}
    cpu.add_to(values, consumed.count)
    notes = _shortfall("prefilled", filled.acknowledged, count, filled.first_error)
    notes += _shortfall("consumed", consumed.count, filled.acknowledged, consumed.first_error)
    return Outcome(values, notes)


def consume_raw(size: int, partitions: int, session: Session) -> Outcome:
    """Fill a topic (acks=1, not timed), then read it with `bench.wire.raw_fetch`: Fetch requests whose records are
    counted from batch headers, never decoded (the broker's fetch path with almost no client in the way)."""
    count = session.sizes.consume if size < KiB else session.sizes.consume_large
    topic = session.new_topic("consume", partitions)
    filled = session.client.produce(topic, partitions, b"x" * size, count, "1", session.deadline())
    host, port = session.running.host_port
    cpu = _BrokerCpu(session.running)
    fetched = raw_fetch(host, port, topic, partitions, filled.acknowledged, session.sizes.workload_timeout_s)
    if fetched.first_at is None or fetched.last_at <= fetched.first_at:
        raise RuntimeError(f"too little read to time: {fetched.records} records ({fetched.error})")
    seconds = fetched.last_at - fetched.first_at
    notes = _shortfall("prefilled", filled.acknowledged, count, filled.first_error)
    notes += _shortfall("consumed", fetched.records, filled.acknowledged, fetched.error)
    values = {MSG_S: fetched.records / seconds, MB_S: fetched.record_bytes / seconds / 1e6}
    cpu.add_to(values, fetched.records)
    return Outcome(values, notes)


WARM_UP = bytes(100)  # a zero send time marks a warm-up record
DRAIN_S = 5.0


def _receive_ages(wire: Wire, bootstrap: str, topic: str, warm: Any, expected: Any, out: Any) -> None:
    """In a child process: note each record's age on arrival until `expected` (set by the sender) have come."""
    ages_ns: list[int] = []

    def on_value(value: bytes) -> None:
        sent_ns = int.from_bytes(value[:8], "big")
        if sent_ns:
            ages_ns.append(time.monotonic_ns() - sent_ns)
        else:
            warm.set()

    with client_for(wire, bootstrap).receiver(topic, on_value):
        drained_by = None
        while drained_by is None or (len(ages_ns) < expected.value and time.monotonic() < drained_by):
            if drained_by is None and expected.value >= 0:
                drained_by = time.monotonic() + DRAIN_S
            time.sleep(0.01)
    out.put(ages_ns)


def end_to_end(rate: int, session: Session) -> Outcome:
    """Send 100 B records at `rate`/s into one partition; a consumer in another process notes their ages.

    The consumer runs in a child process so that it and the sender do not take turns at one GIL; both read the
    same CLOCK_MONOTONIC.
    """
    topic = session.new_topic("latency", 1)
    count = int(rate * session.sizes.latency_s)
    spawn = multiprocessing.get_context("spawn")  # no fork: the bench process has librdkafka threads
    warm, expected, out = spawn.Event(), spawn.Value("q", -1), spawn.Queue()
    running = session.running
    receiver = spawn.Process(target=_receive_ages, args=(running.wire, running.bootstrap, topic, warm, expected, out))
    receiver.start()
    deadline = session.deadline()
    padding = bytes(92)
    try:
        with session.client.sender(topic) as send:
            while not warm.is_set():  # both ends connected and the partition readable
                if time.perf_counter() > deadline or not receiver.is_alive():
                    raise RuntimeError("no warm-up record came back before the deadline")
                send([WARM_UP])
                warm.wait(0.1)
            began = time.perf_counter()
            pids = [os.getpid(), receiver.pid] + ([] if running.pid is None else [running.pid])
            cpu, everyone = _BrokerCpu(running), _ProcessesCpu([pid for pid in pids if pid is not None])
            sent = 0
            while sent < count and time.perf_counter() < deadline:
                due = min(count, int((time.perf_counter() - began) * rate) + 1)
                send([time.monotonic_ns().to_bytes(8, "big") + padding for _ in range(due - sent)])
                sent = due
                time.sleep(max(0.0, began + sent / rate - time.perf_counter()))
            sending_s = time.perf_counter() - began
            load: dict[Metric, float] = {}
            cpu.add_share_to(load, sending_s)
            everyone.add_to(load)
        expected.value = sent
        ages = sorted(out.get(timeout=DRAIN_S + 30))
    finally:
        receiver.join(10)
        if receiver.is_alive():
            receiver.kill()
    if not ages:
        raise RuntimeError("no record arrived")
    notes = _shortfall("sent", sent, count, None) + _shortfall(f"arrived within {DRAIN_S:.0f} s", len(ages), sent, None)
    if sent / sending_s < 0.9 * rate:
        notes.append(f"sent at {sent / sending_s:,.0f} msg/s only: the sender fell behind the rate")
    return Outcome({P50: _percentile_ms(ages, 0.50), P99: _percentile_ms(ages, 0.99), **load}, notes)


def answered(rate: int, partitions: int, session: Session) -> Outcome:
    """Send 100 B records at `rate`/s over `partitions` with acks=all and `linger.ms=0`; each record's age when the
    producer hears the broker's answer: what a durable write costs a caller that waits for it (with fsync=always,
    the fsync rounds: KafkaLite runs every partition's on one thread). Records not answered by the deadline are
    named in a note; the percentiles are of those answered."""
    topic = session.new_topic("answered", partitions)
    load: dict[Metric, float] = {}
    cpu: list[tuple[_BrokerCpu, float]] = []

    def began() -> None:
        cpu.append((_BrokerCpu(session.running), time.perf_counter()))

    def ended() -> None:
        probe, at = cpu[0]
        probe.add_share_to(load, time.perf_counter() - at)

    result = answer_ages(
        session.running.bootstrap, topic, partitions, rate, session.sizes.latency_s, "all", session.deadline(),
        (began, ended),
    )  # fmt: skip
    if not result.ages_ns:
        raise RuntimeError("no record was answered")
    ages = sorted(result.ages_ns)
    notes = _shortfall("answered", len(ages), int(rate * session.sizes.latency_s), None)
    if result.unanswered:
        notes.append(f"{result.unanswered} records still unanswered at the deadline (not in the percentiles)")
    if result.sent / result.sending_s < 0.9 * rate:
        notes.append(f"sent at {result.sent / result.sending_s:,.0f} msg/s only: the sender fell behind the rate")
    return Outcome({P50: _percentile_ms(ages, 0.50), P99: _percentile_ms(ages, 0.99), **load}, notes)


def _percentile_ms(sorted_ns: list[int], q: float) -> float:
    return sorted_ns[min(len(sorted_ns) - 1, int(q * len(sorted_ns)))] / 1e6


def many_partitions(partitions: int, session: Session) -> Outcome:
    began = time.perf_counter()
    topic = session.new_topic("partitions", partitions)
    created_s = time.perf_counter() - began
    count = partitions * session.sizes.records_per_partition
    produced = session.client.produce(topic, partitions, b"x" * 100, count, "1", session.deadline())
    return Outcome(
        {CREATE: created_s, MSG_S: _rate(produced), SERVED: 100 * produced.acknowledged / count},
        _shortfall("acknowledged", produced.acknowledged, count, produced.first_error),
    )


def many_connections(connections: int, session: Session) -> Outcome:
    partitions = 8
    topic = session.new_topic("connections", partitions)
    host, port = session.running.host_port
    result = storm(host, port, topic, partitions, connections, session.sizes.workload_timeout_s)
    notes = [f"{result.failed} of {connections} failed; first: {result.errors[0]}"] if result.errors else []
    return Outcome({ALL_ANSWERED: result.seconds, SERVED: 100 * result.served / connections}, notes)


def plan(sizes: Sizes) -> list[Workload]:
    """Every peer workload, in the order a round runs them (the largest last: a broker it breaks breaks no other)."""
    workloads = [Workload("start", "start-up and idle memory", BOTH, start_up)]
    for size, partitions, acks in itertools.product((100, KiB), (1, 8), ("1", "all")):
        label = f"produce {'1 KiB' if size == KiB else f'{size} B'} · {partitions} partition{'s' * (partitions > 1)}"
        wires = BOTH if acks == "1" else KAFKA  # Redis has no acknowledgement after replication or fsync
        workloads.append(Workload("produce", f"{label} · acks={acks}", wires, partial(produce, size, partitions, acks)))
    processes = sizes.producer_processes
    for size, acks in itertools.product((100, KiB), ("1", "all")):
        label = f"produce {'1 KiB' if size == KiB else f'{size} B'} · 8 partitions · {processes} clients · acks={acks}"
        workloads.append(Workload("produce", label, KAFKA, partial(produce_from_processes, size, 8, acks)))
    workloads.append(Workload("consume", "group consume 100 B · 8 partitions, earliest", BOTH, partial(consume, 8)))
    for size in (100, KiB):
        label = f"consume {'1 KiB' if size == KiB else f'{size} B'} · 8 partitions · {processes} clients, whole batches"
        workloads.append(Workload("consume", label, KAFKA, partial(consume_from_processes, size, 8)))
    for size in (100, KiB):
        label = f"consume {'1 KiB' if size == KiB else f'{size} B'} · 8 partitions · raw Fetch, records not decoded"
        workloads.append(Workload("consume", label, KAFKA, partial(consume_raw, size, 8)))
    for rate in sizes.rates:
        workloads.append(Workload("latency", f"end-to-end at {rate:,} msg/s", BOTH, partial(end_to_end, rate)))
    label = f"acks=all answered at {sizes.answer_rate:,} msg/s · 8 partitions"
    workloads.append(Workload("answered", label, KAFKA, partial(answered, sizes.answer_rate, 8)))
    label = f"{sizes.connections:,} connections (metadata + produce each)"
    workloads.append(Workload("scale", label, KAFKA, partial(many_connections, sizes.connections)))
    for partitions in sizes.partition_counts:
        label = f"produce into {partitions:,} partitions"
        workloads.append(Workload("scale", label, KAFKA, partial(many_partitions, partitions)))
    return workloads


EMBEDDED_SUBJECTS = ("embedded", "seed")


def embedded_round(subject: str, sizes: Sizes) -> dict[Metric, float]:
    """One round of `bench/embedded_bench.py`'s comparison for one design, in a fresh process after a warm-up round
    (as that bench runs it): produce then consume, msg/s."""
    count, partitions = sizes.embedded_records, sizes.embedded_partitions
    design = "kafkalite" if subject == "embedded" else "seed"
    (produced_s, consumed_s, _cpu_s), _peak_rss_mb = embedded_bench.run_child(design, count, partitions, 1_000)
    return {PRODUCE_MSG_S: count / produced_s, CONSUME_MSG_S: count / consumed_s}
