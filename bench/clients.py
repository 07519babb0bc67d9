"""The two clients the workloads drive: confluent-kafka for every Kafka-protocol peer, redis-py for Redis Streams.

Both offer the same four operations, so a workload is written once:
- `produce(topic, partitions, payload, count, acks, deadline)`: `count` records, round-robin over the partitions
  (Redis: one stream per partition, `<topic>-<n>`), stopping early at `deadline`; returns what was acknowledged.
- `consume(topic, partitions, expected, deadline)`: a new consumer group from the earliest offset until `expected`
  records arrived; returns the time to the first record and the time from the first record to the last.
- `sender(topic)` / `receiver(topic, on_value)`: a function sending the records given to it into partition 0 at once
  (Redis: one pipeline), and a background thread calling `on_value` for each record of partition 0 as it arrives
  (end-to-end latency).
Kafka settings are confluent-kafka's defaults except those named here; Redis calls are pipelined in batches.

Two measurements that take the client out of the way (Kafka peers only), so a row ranks brokers, not the client:
- `consume_in_processes`: N child processes (spawned), each a confluent-kafka consumer assigned its share of the
  partitions from the beginning, call `consume(10000)` and count whole batches until every partition reports its end
  (`enable.partition.eof`); no record is looked at in Python. (kcat would do as well, but Debian's build, on
  librdkafka 2.0, cannot talk to Tansu, and every broker must be read by the same client.)
- `produce_in_processes`: N child processes (spawned, each with its own confluent-kafka producer on its own share of
  the partitions) start together on a barrier; throughput is every acknowledged record ÷ (last finish − first start).

And one for the producer's side of latency (Kafka peers only): `answer_ages`, each record's age when the producer
hears the broker's answer for it (its delivery report), at a fixed rate.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import redis
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition

from bench.brokers import QUIET, Wire

POLL_EVERY = 10_000  # records between deadline checks and producer polls
REDIS_PIPELINE = 1_000  # XADDs per round trip
CONSUME_BATCH = 10_000
GROUP_CONSUMER_SETTINGS: dict[str, object] = {
    "auto.offset.reset": "earliest",
    "fetch.queue.backoff.ms": 0,
    "fetch.wait.max.ms": 10,
    "enable.partition.eof": True,
}
"""The group consume row's consumer settings beyond librdkafka's defaults (`KafkaClient.consume` says why each);
`bench/group_consume_probe.py` reads the row with any of them changed."""


@dataclass
class Produced:
    acknowledged: int
    seconds: float
    first_error: str | None


@dataclass
class Consumed:
    count: int
    first_record_s: float | None  # subscribe → first record
    reading_s: float  # from the start of the poll that returned the first records to the last record
    first_error: str | None
    longest_gap_s: float = 0.0  # the longest wait between two polls that returned records, after the first


class Client(Protocol):
    def produce(
        self, topic: str, partitions: int, payload: bytes, count: int, acks: str, deadline: float
    ) -> Produced: ...

    def consume(self, topic: str, partitions: int, expected: int, deadline: float) -> Consumed: ...

    def sender(self, topic: str) -> contextlib.AbstractContextManager[Callable[[list[bytes]], None]]: ...

    def receiver(self, topic: str, on_value: Callable[[bytes], None]) -> contextlib.AbstractContextManager[None]: ...


def client_for(wire: Wire, bootstrap: str) -> Client:
    return KafkaClient(bootstrap) if wire == "kafka" else RedisClient(bootstrap)


class _Receiver:
    """Runs `poll() -> list of values` on a thread until closed, handing each value to `on_value`."""

    def __init__(self, poll: Callable[[], list[bytes]], on_value: Callable[[bytes], None]) -> None:
        self._poll = poll
        self._on_value = on_value
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for value in self._poll():
                    self._on_value(value)
        except BaseException as exc:
            self.error = exc

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


class KafkaClient:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def _producer(self, **settings: object) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap, **QUIET, **settings})

    def _consumer(self, **settings: object) -> Consumer:
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"bench-{uuid.uuid4().hex}", **settings})

    def produce(self, topic: str, partitions: int, payload: bytes, count: int, acks: str, deadline: float) -> Produced:
        errors: list[str] = []

        def on_error(error: KafkaError | None, _message: Message) -> None:
            if error is not None:
                errors.append(str(error))

        producer = self._producer(
            **{"acks": acks, "linger.ms": 5, "delivery.report.only.error": True, "on_delivery": on_error}
        )
        send = producer.produce
        began = time.perf_counter()
        sent = 0
        for sent in range(count):  # after a break, `sent` is how many were sent
            if sent % POLL_EVERY == 0:
                producer.poll(0)
                if time.perf_counter() > deadline:
                    break
            while True:
                try:
                    send(topic, payload, partition=sent % partitions)
                    break
                except BufferError:  # the client's queue is full: let it drain
                    producer.poll(0.005)
        else:
            sent = count
        unflushed = producer.flush(max(1.0, deadline - time.perf_counter()))
        seconds = time.perf_counter() - began
        acknowledged = sent - unflushed - len(errors)
        return Produced(acknowledged, seconds, errors[0] if errors else None)

    def consume(self, topic: str, partitions: int, expected: int, deadline: float) -> Consumed:
        # librdkafka stops fetching for fetch.queue.backoff.ms (1 s by default) once 100,000 messages are queued
        # (queued.min.messages): at 100 B one or two Fetch answers reach that, and the consumer then idled for most
        # of each second, so the row measured the back-off rather than the broker or the client's own work.
        # librdkafka also keeps one Fetch in flight per broker and leaves out partitions whose prefetched messages
        # are over queued.min.messages: a Fetch may then name only partitions already read to their end, which a
        # Kafka broker holds for fetch.wait.max.ms (500 ms by default) while the consumer drains its queue and idles.
        # 10 ms keeps that stall from measuring the long poll instead of the broker.
        # Reading stops at `expected` records, or once every partition reported its end: a broker that kept fewer
        # records (the mock drops the oldest) is not polled until the deadline, which would count those polls in
        # its CPU per message.
        return self.consume_with(topic, partitions, expected, deadline, GROUP_CONSUMER_SETTINGS)

    def consume_with(
        self, topic: str, partitions: int, expected: int, deadline: float, settings: dict[str, object]
    ) -> Consumed:
        """`consume` with the consumer's settings given (`GROUP_CONSUMER_SETTINGS` for the row)."""
        consumer = self._consumer(**{**settings, **QUIET})
        began = time.perf_counter()
        consumer.subscribe([topic])
        progress = _Progress(began)
        at_end: set[int] = set()
        try:
            while progress.count < expected and len(at_end) < partitions and time.perf_counter() < deadline:
                polled = time.perf_counter()
                batch = consumer.consume(CONSUME_BATCH, 0.05)
                errors = [message for message in batch if message.error() is not None]
                at_end.update(m.partition() for m in errors if m.error().code() == KafkaError._PARTITION_EOF)
                progress.arrived(polled, len(batch) - len(errors))
                failures = (m.error() for m in errors if m.error().code() != KafkaError._PARTITION_EOF)
                progress.note_error(next((str(error) for error in failures), None))
        finally:
            consumer.close()
        return progress.result()

    @contextlib.contextmanager
    def sender(self, topic: str) -> Iterator[Callable[[list[bytes]], None]]:
        producer = self._producer(**{"acks": "1", "linger.ms": 0})

        def send(values: list[bytes]) -> None:
            for value in values:
                producer.produce(topic, value, partition=0)
            producer.poll(0)

        try:
            yield send
        finally:
            producer.flush(10)

    @contextlib.contextmanager
    def receiver(self, topic: str, on_value: Callable[[bytes], None]) -> Iterator[None]:
        consumer = self._consumer(**{"enable.auto.commit": False, **QUIET})
        consumer.assign([TopicPartition(topic, 0, 0)])

        def poll() -> list[bytes]:  # poll() returns as soon as a record is there; consume(n) waits for n
            message = consumer.poll(0.05)
            return [] if message is None or message.error() is not None else [message.value()]

        thread = _Receiver(poll, on_value)
        try:
            yield
        finally:
            thread.close()
            consumer.close()
        if thread.error is not None:
            raise thread.error


class RedisClient:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self._connect = lambda: redis.Redis(host=host, port=int(port))

    def produce(self, topic: str, partitions: int, payload: bytes, count: int, acks: str, deadline: float) -> Produced:
        connection = self._connect()
        streams = [f"{topic}-{p}" for p in range(partitions)]
        began = time.perf_counter()
        acknowledged = 0
        while acknowledged < count and time.perf_counter() < deadline:
            pipe = connection.pipeline(transaction=False)
            for n in range(acknowledged, min(count, acknowledged + REDIS_PIPELINE)):
                pipe.xadd(streams[n % partitions], {"v": payload})
            acknowledged += len(pipe.execute())
        return Produced(acknowledged, time.perf_counter() - began, None)

    def consume(self, topic: str, partitions: int, expected: int, deadline: float) -> Consumed:
        connection = self._connect()
        group = f"bench-{uuid.uuid4().hex}"
        streams = [f"{topic}-{p}" for p in range(partitions)]
        began = time.perf_counter()
        for stream in streams:
            connection.xgroup_create(stream, group, id="0", mkstream=True)
        progress = _Progress(began)
        while progress.count < expected and time.perf_counter() < deadline:
            polled = time.perf_counter()
            replies = connection.xreadgroup(
                group, "c1", dict.fromkeys(streams, ">"), count=CONSUME_BATCH, block=50, noack=True
            )
            progress.arrived(polled, sum(len(entries) for _stream, entries in replies))
        return progress.result()

    @contextlib.contextmanager
    def sender(self, topic: str) -> Iterator[Callable[[list[bytes]], None]]:
        connection = self._connect()

        def send(values: list[bytes]) -> None:
            pipe = connection.pipeline(transaction=False)
            for value in values:
                pipe.xadd(f"{topic}-0", {"v": value})
            pipe.execute()

        yield send

    @contextlib.contextmanager
    def receiver(self, topic: str, on_value: Callable[[bytes], None]) -> Iterator[None]:
        connection = self._connect()
        stream = f"{topic}-0"
        last_id: list[bytes | str] = ["0"]

        def poll() -> list[bytes]:
            replies = connection.xread({stream: last_id[0]}, count=1_000, block=50)
            entries = [entry for _stream, stream_entries in replies for entry in stream_entries]
            if entries:
                last_id[0] = entries[-1][0]
            return [fields[b"v"] for _id, fields in entries]

        thread = _Receiver(poll, on_value)
        try:
            yield
        finally:
            thread.close()
        if thread.error is not None:
            raise thread.error


class _Progress:
    """Counts a consumer's records. Reading time starts with the poll that returned the first records, so the time
    to join a group is not in the throughput (it is `first_record_s`)."""

    def __init__(self, began: float) -> None:
        self.began = began
        self.count = 0
        self.first_poll_at: float | None = None
        self.first_at: float | None = None
        self.last_at = began
        self.first_error: str | None = None
        self.longest_gap_s = 0.0

    def arrived(self, polled_at: float, records: int) -> None:
        if not records:
            return
        previous, self.last_at = self.last_at, time.perf_counter()
        if self.first_at is None:
            self.first_poll_at, self.first_at = polled_at, self.last_at
        else:
            self.longest_gap_s = max(self.longest_gap_s, self.last_at - previous)
        self.count += records

    def note_error(self, error: str | None) -> None:
        self.first_error = self.first_error or error

    def result(self) -> Consumed:
        return Consumed(
            count=self.count,
            first_record_s=None if self.first_at is None else self.first_at - self.began,
            reading_s=0.0 if self.first_poll_at is None else self.last_at - self.first_poll_at,
            first_error=self.first_error,
            longest_gap_s=self.longest_gap_s,
        )


def _consume_share(bootstrap: str, topic: str, partitions: list[int], timeout_s: float, barrier: Any, out: Any) -> None:
    """In a child process: read `partitions` from the beginning to their end in whole batches; put
    (records, monotonic time of the first batch, of the last)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}", "enable.auto.commit": False,
         "enable.partition.eof": True, "fetch.queue.backoff.ms": 0, **QUIET}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    barrier.wait(60)
    deadline = time.monotonic() + timeout_s
    count, first_at, last_at, at_end = 0, 0.0, 0.0, 0
    try:
        while at_end < len(partitions) and time.monotonic() < deadline:
            batch = consumer.consume(CONSUME_BATCH, 0.05)
            if not batch:
                continue
            errors = [m for m in batch if m.error() is not None]
            at_end += sum(1 for m in errors if m.error().code() == KafkaError._PARTITION_EOF)
            records = len(batch) - len(errors)
            if records:
                last_at = time.monotonic()
                first_at = first_at or last_at
                count += records
    finally:
        consumer.close()
    out.put((count, first_at, last_at))


@dataclass
class Answered:
    ages_ns: list[int]  # of the records answered, in the order their reports came
    sent: int
    unanswered: int  # records still without an answer when the deadline came
    sending_s: float  # from the first timed record to the last one sent (the warm-up and the wait after not counted)


def answer_ages(
    bootstrap: str,
    topic: str,
    partitions: int,
    rate: int,
    seconds: float,
    acks: str,
    deadline: float,
    window: tuple[Callable[[], None], Callable[[], None]] | None = None,
) -> Answered:
    """Send 100 B records at `rate`/s for `seconds`, round-robin over `partitions`, with `linger.ms=0`, and note each
    record's age in ns when its delivery report (the broker's answer) arrives.

    The send time is written in the record; a thread polls the producer, so a report is read as soon as librdkafka
    has it, not when the sending loop next looks. Before the clock starts, one record per partition is sent and
    answered (connections made, leaders known). `window`: called as the first timed record is sent and after the
    last one, for measurements of the sending window alone."""
    ages: list[int] = []
    failures: list[str] = []
    padding = bytes(92)

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failures.append(str(error))
            return
        sent_ns = int.from_bytes((message.value() or b"")[:8], "big")
        if sent_ns:
            ages.append(time.monotonic_ns() - sent_ns)

    producer = Producer(
        {"bootstrap.servers": bootstrap, **QUIET, "acks": acks, "linger.ms": 0, "on_delivery": on_delivery}
    )
    for partition in range(partitions):
        producer.produce(topic, bytes(100), partition=partition)  # a zero send time: not counted
    if producer.flush(max(1.0, deadline - time.perf_counter())):
        raise RuntimeError("the warm-up records were not answered before the deadline")
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            producer.poll(0.01)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    count = int(rate * seconds)
    sent = 0
    try:
        if window is not None:
            window[0]()
        began = time.perf_counter()
        while sent < count and time.perf_counter() < deadline:
            due = min(count, int((time.perf_counter() - began) * rate) + 1)
            while sent < due:
                value = time.monotonic_ns().to_bytes(8, "big") + padding
                try:
                    producer.produce(topic, value, partition=sent % partitions)
                except BufferError:  # the client's queue is full: the poller drains it
                    time.sleep(0.001)
                    continue
                sent += 1
            time.sleep(max(0.0, began + sent / rate - time.perf_counter()))
        sending_s = time.perf_counter() - began
        if window is not None:
            window[1]()
        unanswered = producer.flush(max(1.0, deadline - time.perf_counter()))
    finally:
        stop.set()
        poller.join(10)
    if failures:
        raise RuntimeError(f"{len(failures)} records failed; first: {failures[0]}")
    return Answered(ages, sent, unanswered, sending_s)


def consume_in_processes(
    bootstrap: str, topic: str, partitions: int, processes: int, expected: int, timeout_s: float
) -> Consumed:
    """Read every partition of `topic` to its end with `processes` confluent-kafka consumers at once, each assigned
    its share of the partitions, counting whole `consume()` batches (the messages are never looked at in Python).
    Throughput counts from the first batch any of them got to the last record any of them got."""
    spawn = multiprocessing.get_context("spawn")
    barrier, out = spawn.Barrier(processes), spawn.Queue()
    shares = [list(range(i, partitions, processes)) for i in range(processes)]
    children = [
        spawn.Process(target=_consume_share, args=(bootstrap, topic, share, timeout_s, barrier, out))
        for share in shares
    ]
    began = time.monotonic()
    results = _gather_children(children, out, timeout_s + 120)
    count = sum(r[0] for r in results)
    firsts = [r[1] for r in results if r[0]]
    first = min(firsts) if firsts else None
    last = max(r[2] for r in results)
    return Consumed(
        count,
        None if first is None else first - began,
        0.0 if first is None else last - first,
        None if count >= expected else f"{count} of {expected} records read",
    )


def _produce_share(bootstrap: str, topic: str, partitions: list[int], payload: bytes, count: int, acks: str,
                   timeout_s: float, barrier: Any, out: Any) -> None:  # fmt: skip
    """In a child process: wait for the others, then produce `count` records round-robin over `partitions`."""
    producer = Producer({"bootstrap.servers": bootstrap, **QUIET, "acks": acks, "linger.ms": 5})
    producer.list_topics(topic, timeout=30)  # connected and the partitions known before the clock starts
    barrier.wait(60)
    began = time.monotonic()
    deadline = began + timeout_s
    failed = [0]

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failed[0] += 1

    send = producer.produce
    sent = 0
    for sent in range(count):
        if sent % POLL_EVERY == 0:
            producer.poll(0)
            if time.monotonic() > deadline:
                break
        while True:
            try:
                send(topic, payload, partition=partitions[sent % len(partitions)], on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.005)
    else:
        sent = count
    unflushed = producer.flush(max(1.0, deadline - time.monotonic()))
    out.put((sent - unflushed - failed[0], began, time.monotonic()))


def produce_in_processes(bootstrap: str, topic: str, partitions: int, payload: bytes, count: int, acks: str,
                         processes: int, timeout_s: float) -> Produced:  # fmt: skip
    """`count` records from `processes` producer processes at once; see the module docstring."""
    spawn = multiprocessing.get_context("spawn")  # no fork: the bench process has librdkafka threads
    barrier, out = spawn.Barrier(processes), spawn.Queue()
    children = [
        spawn.Process(
            target=_produce_share,
            args=(
                bootstrap,
                topic,
                list(range(i, partitions, processes)) or [i % partitions],
                payload,
                count // processes,
                acks,
                timeout_s,
                barrier,
                out,
            ),
        )
        for i in range(processes)
    ]
    shares = _gather_children(children, out, timeout_s + 120)
    acknowledged = sum(share[0] for share in shares)
    seconds = max(share[2] for share in shares) - min(share[1] for share in shares)
    shortfall = count // processes * processes - acknowledged
    return Produced(acknowledged, seconds, f"{shortfall} records not acknowledged" if shortfall else None)


def _gather_children(children: list[Any], out: Any, timeout_s: float) -> list[Any]:
    """Start the child processes, collect one result from each through `out`, and make sure every one has ended."""
    for child in children:
        child.start()
    try:
        return [out.get(timeout=timeout_s) for _ in children]
    finally:
        for child in children:
            child.join(10)
            if child.is_alive():
                child.kill()
