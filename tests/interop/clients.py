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
from typing import Any, ClassVar, cast

import aiokafka
import aiokafka.admin
import confluent_kafka
import confluent_kafka.admin
import kafka
import kafka.admin
import kafka.codec
import pytest
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

WAIT_S = 30.0
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs config_source of a topic's own override

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


def until(
    done: Callable[[], bool], what: str | Callable[[], str], step: Callable[[], None] = lambda: time.sleep(0.05)
) -> None:
    """Wait for `done`, at most WAIT_S. `what` names what is awaited; a callable is called only on a timeout, so a
    description that quotes a log shows the log as it is when the wait fails, not as it was when the wait began."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
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

    # --- admin: clients with `has_admin` ---------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        raise NotImplementedError

    def create_partitions(self, topic: str, total: int) -> None:
        raise NotImplementedError

    def topic_config(self, topic: str) -> dict[str, str]:
        raise NotImplementedError

    def alter_topic_config(self, topic: str, name: str, value: str) -> None:
        raise NotImplementedError

    def delete_topic(self, topic: str) -> None:
        raise NotImplementedError

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        raise NotImplementedError

    def groups(self) -> dict[str, str]:
        """Group id -> state as ListGroups reports it, lower case."""
        raise NotImplementedError

    def group_state(self, group: str) -> str:
        """The state DescribeGroups reports, lower case."""
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

    def topics(self) -> dict[str, int]:
        return {name: len(t.partitions) for name, t in self.admin().list_topics(timeout=WAIT_S).topics.items()}

    def create_partitions(self, topic: str, total: int) -> None:
        admin = self.admin()
        admin.create_partitions([confluent_kafka.admin.NewPartitions(topic, total)])[topic].result(WAIT_S)

    def topic_config(self, topic: str) -> dict[str, str]:
        admin = self.admin()
        [future] = admin.describe_configs([confluent_kafka.admin.ConfigResource("topic", topic)]).values()
        return {name: entry.value for name, entry in future.result(WAIT_S).items()}

    def alter_topic_config(self, topic: str, name: str, value: str) -> None:
        admin = self.admin()
        change = confluent_kafka.admin.ConfigEntry(
            name, value, incremental_operation=confluent_kafka.admin.AlterConfigOpType.SET
        )
        resource = confluent_kafka.admin.ConfigResource("topic", topic, incremental_configs=[change])
        [future] = admin.incremental_alter_configs([resource]).values()
        future.result(WAIT_S)

    def delete_topic(self, topic: str) -> None:
        admin = self.admin()
        admin.delete_topics([topic])[topic].result(WAIT_S)

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        consumer = self.consumer(**{"group.id": group})
        try:
            consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, partition, offset)], asynchronous=False)
        finally:
            consumer.close()

    def groups(self) -> dict[str, str]:
        admin = self.admin()
        listed = admin.list_consumer_groups(request_timeout=WAIT_S).result(WAIT_S).valid
        return {g.group_id: g.state.name.lower() for g in listed}

    def group_state(self, group: str) -> str:
        admin = self.admin()
        described = admin.describe_consumer_groups([group], request_timeout=WAIT_S)[group].result(WAIT_S)
        return str(described.state.name).lower()

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
        return _run_started(lambda: aiokafka.admin.AIOKafkaAdminClient(bootstrap_servers=self.bootstrap), call, "close")

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

    def topics(self) -> dict[str, int]:
        described = self.run_admin(lambda admin: admin.describe_topics())
        return {t["topic"]: len(t["partitions"]) for t in described}

    def create_partitions(self, topic: str, total: int) -> None:
        self.run_admin(lambda admin: admin.create_partitions({topic: aiokafka.admin.NewPartitions(total_count=total)}))

    def config_entries(self, topic: str) -> list[tuple[Any, ...]]:
        """(name, value, read_only, source, ...) per config of the topic."""
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        [response] = self.run_admin(lambda admin: admin.describe_configs([resource]))
        [(error, _message, _type, _name, entries)] = response.resources
        assert error == 0, response
        return list(entries)

    def topic_config(self, topic: str) -> dict[str, str]:
        return {entry[0]: entry[1] for entry in self.config_entries(topic)}

    def alter_topic_config(self, topic: str, name: str, value: str) -> None:
        """AlterConfigs (key 33): aiokafka has no incremental call, so it sends the whole set of overrides."""
        overrides = {e[0]: e[1] for e in self.config_entries(topic) if e[3] == DYNAMIC_TOPIC_CONFIG} | {name: value}
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs=overrides)
        [response] = self.run_admin(lambda admin: admin.alter_configs([resource]))
        assert [r[0] for r in response.resources] == [0], response

    def delete_topic(self, topic: str) -> None:
        self.run_admin(lambda admin: admin.delete_topics([topic]))

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        async def commit(consumer: aiokafka.AIOKafkaConsumer) -> None:
            tp = aiokafka.TopicPartition(topic, partition)
            consumer.assign([tp])
            await consumer.commit({tp: offset})

        self.run_consumer(commit, group_id=group)

    def groups(self) -> dict[str, str]:
        listed = self.run_admin(lambda admin: admin.list_consumer_groups())
        return {group: self.group_state(group) for group, _protocol in listed}

    def group_state(self, group: str) -> str:
        [response] = self.run_admin(lambda admin: admin.describe_consumer_groups([group]))
        [(error, _group, state, *_rest)] = response.groups
        assert error == 0, response
        return str(state).lower()

    def run_consumer(self, call: Callable[[aiokafka.AIOKafkaConsumer], Any], **config: Any) -> Any:
        def consumer() -> aiokafka.AIOKafkaConsumer:
            return aiokafka.AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False, **config
            )

        return _run_started(consumer, call, "stop")

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


def _run_started(make: Callable[[], Any], call: Callable[[Any], Any], stop: str) -> Any:
    """Make an aiokafka client inside a fresh event loop, start it, await `call(client)`, then `stop` it."""

    async def main() -> Any:
        client = make()
        await client.start()
        try:
            return await asyncio.wait_for(call(client), WAIT_S)
        finally:
            await getattr(client, stop)()

    return asyncio.run(main())


class KafkaPython(Client):
    name = "kafka-python"
    codecs = tuple(c for c in CODECS if c == "none" or getattr(kafka.codec, f"has_{c}")())
    codec_gap = "no python-snappy / lz4 / zstandard module is installed for kafka-python"

    def admin(self) -> kafka.KafkaAdminClient:
        return kafka.KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=int(WAIT_S * 1000))

    def create_topic(self, topic: str, partitions: int, config: dict[str, str] | None = None) -> None:
        new = kafka.admin.NewTopic(topic, partitions, 1, topic_configs=config or {})
        self.run_admin(lambda admin: admin.create_topics([new]))

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

    def run_admin(self, call: Callable[[kafka.KafkaAdminClient], Any]) -> Any:
        admin = self.admin()
        try:
            return call(admin)
        finally:
            admin.close()

    def topics(self) -> dict[str, int]:
        return {t["name"]: len(t["partitions"]) for t in self.run_admin(lambda admin: admin.describe_topics())}

    def create_partitions(self, topic: str, total: int) -> None:
        self.run_admin(lambda admin: admin.create_partitions({topic: kafka.admin.NewPartitions(total_count=total)}))

    def topic_config(self, topic: str) -> dict[str, str]:
        resource = kafka.admin.ConfigResource(kafka.admin.ConfigResourceType.TOPIC, topic)
        described = self.run_admin(lambda admin: admin.describe_configs([resource]))
        return {name: entry["value"] for name, entry in described["topic"][topic].items()}

    def alter_topic_config(self, topic: str, name: str, value: str) -> None:
        resource = kafka.admin.ConfigResource(kafka.admin.ConfigResourceType.TOPIC, topic, configs={name: value})
        assert self.run_admin(lambda admin: admin.alter_configs([resource])) == {"topic": {topic: "OK"}}

    def delete_topic(self, topic: str) -> None:
        self.run_admin(lambda admin: admin.delete_topics([topic]))

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        consumer = self.consumer(group_id=group)
        try:
            tp = kafka.TopicPartition(topic, partition)
            consumer.assign([tp])
            consumer.commit({tp: kafka.structs.OffsetAndMetadata(offset, "", -1)})
        finally:
            consumer.close()

    def groups(self) -> dict[str, str]:
        listed = self.run_admin(lambda admin: admin.list_groups())
        return {g["group_id"]: g["group_state"].lower() for g in listed}

    def group_state(self, group: str) -> str:
        described = self.run_admin(lambda admin: admin.describe_groups([group]))
        return str(described[group]["group_state"]).lower()

    def consumer(self, **config: Any) -> kafka.KafkaConsumer:
        return kafka.KafkaConsumer(
            bootstrap_servers=self.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False, **config
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
    """kcat has no admin API (-L, metadata, is all it can ask): topics come from auto-creation (`kafkalite serve
    --num-partitions`), and the admin scenario has no kcat cell (`ADMIN_CLIENTS`)."""

    name = "kcat"
    has_admin = False

    def run(self, *args: str, stdin: bytes = b"") -> str:
        done = subprocess.run(
            ["kcat", "-b", self.bootstrap, "-q", *args], input=stdin, capture_output=True, timeout=WAIT_S
        )
        assert done.returncode == 0, done.stderr.decode()
        assert b"fail" not in done.stderr.lower(), done.stderr.decode()
        return done.stdout.decode()

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
ADMIN_CLIENTS = [param for param in CLIENTS if cast(type[Client], param.values[0]).has_admin]
