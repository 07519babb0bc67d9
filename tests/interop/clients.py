"""One small adapter per Kafka client, so every scenario module runs the same steps with each of them.

Adapters are synchronous (aiokafka's coroutines run under `asyncio.run`), read from the beginning of every partition,
and fail loudly: a delivery error raises, and every wait is bounded by `WAIT_S`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import aiokafka
import aiokafka.admin
import confluent_kafka
import confluent_kafka.admin
import kafka
import kafka.admin
import kafka.codec
import pytest

WAIT_S = 30.0
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Outgoing:
    value: bytes
    key: bytes | None = None
    headers: Headers = ()


@dataclass(frozen=True, slots=True)
class Received:
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: Headers


def messages(prefix: str, count: int, headers: Headers = ()) -> list[Outgoing]:
    """Numbered values `prefix-i`; odd ones keyed `key-i`, even ones unkeyed."""
    return [Outgoing(f"{prefix}-{i}".encode(), f"key-{i}".encode() if i % 2 else None, headers) for i in range(count)]


def assert_intact(sent: Sequence[Outgoing], got: Sequence[Received]) -> None:
    """Every message exactly once with its key and headers; per partition, offsets from 0 in the order sent."""
    assert sorted(r.value for r in got) == sorted(m.value for m in sent)
    by_value = {m.value: (m.key, m.headers) for m in sent}
    for r in got:
        assert (r.key, r.headers) == by_value[r.value], r
    order = {m.value: i for i, m in enumerate(sent)}
    for p in {r.partition for r in got}:
        mine = sorted((r for r in got if r.partition == p), key=lambda r: r.offset)
        assert [r.offset for r in mine] == list(range(len(mine)))
        assert [order[r.value] for r in mine] == sorted(order[r.value] for r in mine)


@dataclass(slots=True)
class Deliveries:
    """A confluent-kafka `on_delivery` callback recording what the broker acknowledged and what failed."""

    acked: list[Received] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def __call__(self, error: Any, m: Any) -> None:
        if error is None:
            self.acked.append(Received(m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ())))
        else:
            self.failed.append(str(error))


def assert_acked_exactly_once(acked: Sequence[Received], log: Sequence[Received]) -> None:
    """Each acknowledged record sits once in the log, at the offset it was acknowledged with; nothing is doubled."""
    assert len({r.value for r in log}) == len(log), "a record was written twice"
    at = {(r.partition, r.offset): r.value for r in log}
    missing = [r for r in acked if at.get((r.partition, r.offset)) != r.value]
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged records are misplaced: {missing[:3]}"


def until(done: Callable[[], bool], what: str, step: Callable[[], None] = lambda: time.sleep(0.05)) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()


class Client:
    """What every scenario needs from a client; `codecs` are the compression types it can produce here."""

    name: ClassVar[str]
    codecs: ClassVar[tuple[str, ...]] = CODECS
    codec_gap: ClassVar[str] = ""
    has_admin: ClassVar[bool] = True

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def skip_unless_codec(self, codec: str) -> None:
        if codec not in self.codecs:
            pytest.skip(f"{self.name} cannot produce {codec} here: {self.codec_gap}")

    def create_topic(self, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
        raise NotImplementedError

    def produce(self, topic: str, sent: Sequence[Outgoing], codec: str = "none", partition: int | None = None) -> None:
        raise NotImplementedError

    def consume(self, topic: str, count: int) -> list[Received]:
        raise NotImplementedError

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        raise NotImplementedError


class Confluent(Client):
    name = "confluent-kafka"

    def admin(self) -> confluent_kafka.admin.AdminClient:
        return confluent_kafka.admin.AdminClient({"bootstrap.servers": self.bootstrap})

    def consumer(self, **config: Any) -> confluent_kafka.Consumer:
        return confluent_kafka.Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "interop", "enable.auto.commit": False, **config}
        )

    def create_topic(self, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
        new = confluent_kafka.admin.NewTopic(topic, partitions, 1, config=config or {})
        admin = self.admin()  # referenced until the result is in: a collected handle cancels its requests
        admin.create_topics([new])[topic].result(WAIT_S)

    def produce(self, topic: str, sent: Sequence[Outgoing], codec: str = "none", partition: int | None = None) -> None:
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "compression.type": codec, "linger.ms": 5}
        )
        errors: list[Any] = []
        where = {} if partition is None else {"partition": partition}
        for m in sent:
            producer.produce(
                topic, m.value, key=m.key, headers=list(m.headers), on_delivery=lambda e, _: errors.append(e), **where
            )
        assert producer.flush(WAIT_S) == 0
        assert errors == [None] * len(sent)

    def consume(self, topic: str, count: int) -> list[Received]:
        consumer = self.consumer()
        try:
            partitions = consumer.list_topics(topic, timeout=WAIT_S).topics[topic].partitions
            consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in partitions])
            received: list[Received] = []

            def poll() -> None:
                m = consumer.poll(0.2)
                if m is not None:
                    assert m.error() is None, m.error()
                    received.append(Received(m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ())))

            until(lambda: len(received) >= count, f"{count} messages from {topic}", poll)
            return received
        finally:
            consumer.close()

    def end_offsets(self, topic: str) -> dict[int, int]:
        consumer = self.consumer()
        try:
            partitions = consumer.list_topics(topic, timeout=WAIT_S).topics[topic].partitions
            tps = [confluent_kafka.TopicPartition(topic, p) for p in partitions]
            return {tp.partition: consumer.get_watermark_offsets(tp, timeout=WAIT_S)[1] for tp in tps}
        finally:
            consumer.close()

    def read_all(self, topic: str) -> list[Received]:
        """Every record up to the high watermarks."""
        return self.consume(topic, sum(self.end_offsets(topic).values()))

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        consumer = self.consumer()
        try:
            [found] = consumer.offsets_for_times(
                [confluent_kafka.TopicPartition(topic, partition, timestamp_ms)], timeout=WAIT_S
            )
            return None if found.offset < 0 else found.offset
        finally:
            consumer.close()


class AioKafka(Client):
    name = "aiokafka"

    def create_topic(self, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
        new = aiokafka.admin.NewTopic(topic, partitions, 1, topic_configs=config or {})
        self.run_admin(lambda admin: admin.create_topics([new]))

    def run_admin(self, call: Callable[[aiokafka.admin.AIOKafkaAdminClient], Any]) -> Any:
        async def main() -> Any:
            admin = aiokafka.admin.AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await admin.start()
            try:
                return await asyncio.wait_for(call(admin), WAIT_S)
            finally:
                await admin.close()

        return asyncio.run(main())

    def produce(self, topic: str, sent: Sequence[Outgoing], codec: str = "none", partition: int | None = None) -> None:
        async def main() -> None:
            compression = None if codec == "none" else codec
            producer = aiokafka.AIOKafkaProducer(
                bootstrap_servers=self.bootstrap, acks="all", compression_type=compression, linger_ms=5
            )
            await producer.start()
            try:
                acks = [
                    await producer.send(topic, m.value, key=m.key, headers=list(m.headers), partition=partition)
                    for m in sent
                ]
                await asyncio.wait_for(asyncio.gather(*acks), WAIT_S)
            finally:
                await producer.stop()

        asyncio.run(main())

    def run_consumer(self, call: Callable[[aiokafka.AIOKafkaConsumer], Any]) -> Any:
        async def main() -> Any:
            consumer = aiokafka.AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
            )
            await consumer.start()
            try:
                return await asyncio.wait_for(call(consumer), WAIT_S)
            finally:
                await consumer.stop()

        return asyncio.run(main())

    def consume(self, topic: str, count: int) -> list[Received]:
        async def read(consumer: aiokafka.AIOKafkaConsumer) -> list[Received]:
            partitions = await consumer._client._wait_on_metadata(topic) or ()
            consumer.assign([aiokafka.TopicPartition(topic, p) for p in sorted(partitions)])
            received: list[Received] = []
            while len(received) < count:
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    received += [Received(m.partition, m.offset, m.key, m.value, tuple(m.headers)) for m in batch]
            return received

        return self.run_consumer(read)

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        async def lookup(consumer: aiokafka.AIOKafkaConsumer) -> int | None:
            tp = aiokafka.TopicPartition(topic, partition)
            found = (await consumer.offsets_for_times({tp: timestamp_ms}))[tp]
            return None if found is None else found.offset

        return self.run_consumer(lookup)


class KafkaPython(Client):
    name = "kafka-python"
    codecs = tuple(c for c in CODECS if c == "none" or getattr(kafka.codec, f"has_{c}")())
    codec_gap = "no python-snappy / lz4 / zstandard module is installed for kafka-python"

    def admin(self) -> kafka.KafkaAdminClient:
        return kafka.KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=int(WAIT_S * 1000))

    def create_topic(self, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
        admin = self.admin()
        try:
            admin.create_topics([kafka.admin.NewTopic(topic, partitions, 1, topic_configs=config or {})])
        finally:
            admin.close()

    def produce(self, topic: str, sent: Sequence[Outgoing], codec: str = "none", partition: int | None = None) -> None:
        producer = kafka.KafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", compression_type=None if codec == "none" else codec
        )
        try:
            futures = [
                producer.send(topic, m.value, key=m.key, headers=list(m.headers), partition=partition) for m in sent
            ]
            for future in futures:
                future.get(timeout=WAIT_S)
        finally:
            producer.close(WAIT_S)

    def consumer(self) -> kafka.KafkaConsumer:
        return kafka.KafkaConsumer(
            bootstrap_servers=self.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
        )

    def consume(self, topic: str, count: int) -> list[Received]:
        consumer = self.consumer()
        try:
            until(lambda: bool(consumer.partitions_for_topic(topic)), f"metadata of {topic}")
            partitions = sorted(consumer.partitions_for_topic(topic))
            consumer.assign([kafka.TopicPartition(topic, p) for p in partitions])
            received: list[Received] = []

            def poll() -> None:
                for batch in consumer.poll(200).values():
                    received.extend(Received(r.partition, r.offset, r.key, r.value, tuple(r.headers)) for r in batch)

            until(lambda: len(received) >= count, f"{count} messages from {topic}", poll)
            return received
        finally:
            consumer.close()

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        consumer = self.consumer()
        try:
            tp = kafka.TopicPartition(topic, partition)
            found = consumer.offsets_for_times({tp: timestamp_ms})[tp]
            return None if found is None else found.offset
        finally:
            consumer.close()


class Kcat(Client):
    """kcat has no admin API: topics come from auto-creation (`kafkalite serve --num-partitions`)."""

    name = "kcat"
    has_admin = False

    def run(self, *args: str, stdin: bytes = b"") -> str:
        done = subprocess.run(
            ["kcat", "-b", self.bootstrap, "-q", *args], input=stdin, capture_output=True, timeout=WAIT_S
        )
        assert done.returncode == 0, done.stderr.decode()
        assert b"fail" not in done.stderr.lower(), done.stderr.decode()
        return done.stdout.decode()

    def create_topic(self, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
        pytest.skip("kcat has no admin API (it relies on auto-creation)")

    def produce(self, topic: str, sent: Sequence[Outgoing], codec: str = "none", partition: int | None = None) -> None:
        """One kcat run per distinct header set (kcat's -H applies to every message of a run)."""
        for headers, run in _runs_by_headers(sent):
            lines = b"".join((m.key + b"\t" if m.key is not None else b"") + m.value + b"\n" for m in run)
            where = () if partition is None else ("-p", str(partition))
            header_args = [arg for name, value in headers for arg in ("-H", f"{name}={value.decode()}")]
            self.run("-P", "-t", topic, "-z", codec, "-K", "\t", "-X", "acks=all", *where, *header_args, stdin=lines)

    def consume(self, topic: str, count: int) -> list[Received]:
        lines = self.run("-C", "-t", topic, "-o", "beginning", "-e", "-c", str(count), "-J").splitlines()
        received = []
        for line in lines:
            m = json.loads(line)
            flat = m.get("headers") or []
            headers = tuple((flat[i], flat[i + 1].encode()) for i in range(0, len(flat), 2))
            key = None if m["key"] is None else m["key"].encode()
            received.append(Received(m["partition"], m["offset"], key, m["payload"].encode(), headers))
        return received

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        at = f"s@{timestamp_ms}"
        out = self.run("-C", "-t", topic, "-p", str(partition), "-o", at, "-e", "-c", "1", "-f", "%o\n")
        return int(out) if out.strip() else None


def _runs_by_headers(sent: Iterable[Outgoing]) -> list[tuple[Headers, list[Outgoing]]]:
    runs: list[tuple[Headers, list[Outgoing]]] = []
    for m in sent:
        if runs and runs[-1][0] == m.headers:
            runs[-1][1].append(m)
        else:
            runs.append((m.headers, [m]))
    return runs


NO_KCAT = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)")
CLIENTS = [
    pytest.param(Confluent, id=Confluent.name),
    pytest.param(AioKafka, id=AioKafka.name),
    pytest.param(KafkaPython, id=KafkaPython.name),
    pytest.param(Kcat, id=Kcat.name, marks=NO_KCAT),
]
