"""A compacted topic over the wire: every client writes to it, the cleaner rewrites it, and every client then reads
it from the start across the gaps, the rebuilt batches and the header-only batch it left, up to the log end.

One served file broker per module (its cleaner thread off: the test starts each cleaning, so it knows there was
one). Writers, in order: confluent-kafka (idempotent, zstd), kafka-python (gzip), aiokafka (lz4), kcat (tombstones
with -Z). The idempotent producer's last batch is wholly superseded by the later writers, so the cleaner keeps it as
a header-only batch: readers must step over a batch with no records.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from conftest import RawClient
from kafkalite.broker.log_reader import scan_batches
from kafkalite.protocol.records import Compression, RecordToWrite, build_batch
from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

TOPIC = "changelog"
KEYS = 10
CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"}
Latest = dict[bytes, bytes | None]


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ThreadedServer, Latest, int]]:
    """(server, latest value per key, log end offset) once every client has written and the log is cleaned."""
    data_dir = tmp_path_factory.mktemp("compaction") / "data"
    with run_in_thread(data_dir=data_dir, fsync=False, log_cleaner_enable=False) as server:
        server.call(server.broker.create_topic(TOPIC, 1, CONFIGS))
        latest: Latest = {}
        write_with_confluent(server, latest)
        write_with_kafka_python(server, latest)
        asyncio.run(write_with_aiokafka(server, latest))
        write_with_kcat(server, latest)
        cleaner = server.broker.cleaner
        assert cleaner is not None
        size_before = server.broker.partition(TOPIC, 0).log.size_bytes
        for _ in range(3):
            server.call(cleaner.clean_once())
        assert cleaner.cleanings >= 1
        assert server.broker.partition(TOPIC, 0).log.size_bytes < size_before / 2
        yield server, latest, server.broker.partition(TOPIC, 0).high_watermark


def write_with_confluent(server: ThreadedServer, latest: Latest) -> None:
    producer = Producer(
        {"bootstrap.servers": server.bootstrap, "enable.idempotence": True, "compression.type": "zstd", "linger.ms": 5}
    )
    for round_ in range(20):
        for key in range(KEYS):
            value = b"confluent-%d-%d" % (key, round_) + b"." * 40
            producer.produce(TOPIC, value, b"k%d" % key)
            latest[b"k%d" % key] = value
        producer.flush(10)
    assert producer.flush(10) == 0


def write_with_kafka_python(server: ThreadedServer, latest: Latest) -> None:
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, compression_type="gzip", acks="all")
    for round_ in range(10):
        for key in range(KEYS):
            value = b"kafka-python-%d-%d" % (key, round_) + b"-" * 40
            producer.send(TOPIC, value, key=b"k%d" % key)
            latest[b"k%d" % key] = value
        producer.flush(10)
    producer.close(10)


async def write_with_aiokafka(server: ThreadedServer, latest: Latest) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap, compression_type="lz4", acks="all")
    await producer.start()
    try:
        for round_ in range(10):
            for key in range(0, KEYS, 2):
                value = b"aiokafka-%d-%d" % (key, round_) + b"~" * 40
                await producer.send_and_wait(TOPIC, value, key=b"k%d" % key)
                latest[b"k%d" % key] = value
    finally:
        await producer.stop()


def write_with_kcat(server: ThreadedServer, latest: Latest) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (apt-get install kcat)")
    lines = b"k3:\nk7:\n" + b"".join(b"filler%d:%s\n" % (n % 3, b"f" * 60) for n in range(40))
    kcat(server, "-P", "-t", TOPIC, "-K", ":", "-Z", stdin=lines)
    latest[b"k3"] = latest[b"k7"] = None
    for n in range(40):
        latest[b"filler%d" % (n % 3)] = b"f" * 60


def kcat(server: ThreadedServer, *args: str, stdin: bytes = b"") -> str:
    done = subprocess.run(["kcat", "-b", server.bootstrap, *args], input=stdin, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def check(read: list[tuple[int, bytes | None, bytes | None]], latest: Latest, end: int) -> None:
    offsets = [offset for offset, _, _ in read]
    assert offsets == sorted(set(offsets)), "offsets must strictly increase"
    assert offsets[-1] == end - 1, "the reader stopped before the log end"
    assert len(offsets) < end / 2, "the reader saw the log as it was before cleaning"
    seen: Latest = {}
    for _, key, value in read:
        assert key is not None
        seen[key] = value
    assert seen == latest


def test_confluent_kafka_reads_across_the_cleaned_gaps(cleaned: tuple[ThreadedServer, Latest, int]) -> None:
    server, latest, end = cleaned
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    read: list[tuple[int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + 30
    try:
        while (not read or read[-1][0] < end - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            read.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    check(read, latest, end)


def test_kafka_python_reads_across_the_cleaned_gaps(cleaned: tuple[ThreadedServer, Latest, int]) -> None:
    server, latest, end = cleaned
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    partition = KpTopicPartition(TOPIC, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    read: list[tuple[int, bytes | None, bytes | None]] = []
    try:
        for message in consumer:
            read.append((message.offset, message.key, message.value))
            if message.offset >= end - 1:
                break
    finally:
        consumer.close()
    check(read, latest, end)


async def test_aiokafka_reads_across_the_cleaned_gaps(cleaned: tuple[ThreadedServer, Latest, int]) -> None:
    server, latest, end = cleaned
    consumer = AIOKafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False)
    partition = AioTopicPartition(TOPIC, 0)
    await consumer.start()
    read: list[tuple[int, bytes | None, bytes | None]] = []
    try:
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        async with asyncio.timeout(30):
            while not read or read[-1][0] < end - 1:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    read.extend((m.offset, m.key, m.value) for m in messages)
    finally:
        await consumer.stop()
    check(read, latest, end)


def test_kcat_reads_across_the_cleaned_gaps(cleaned: tuple[ThreadedServer, Latest, int]) -> None:
    server, latest, end = cleaned
    out = kcat(server, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-Z", "-f", "%o %k %S %s\n")
    read: list[tuple[int, bytes | None, bytes | None]] = []
    for line in out.splitlines():
        offset, key, size, *value = line.split(" ", 3)
        read.append((int(offset), key.encode(), None if size == "-1" else (value[0] if value else "").encode()))
    check(read, latest, end)


def test_a_keyless_record_is_refused_with_invalid_record(cleaned: tuple[ThreadedServer, Latest, int]) -> None:
    server, _, end = cleaned
    failures: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": server.bootstrap, "message.send.max.retries": 0})
    producer.produce(TOPIC, b"no key", on_delivery=lambda err, _msg: failures.append(err))
    producer.flush(10)
    assert len(failures) == 1
    assert failures[0] is not None
    assert failures[0].code() == KafkaError.INVALID_RECORD
    assert server.broker.partition(TOPIC, 0).high_watermark == end  # nothing was written


def test_the_cleaned_log_holds_what_the_readers_stepped_over(cleaned: tuple[ThreadedServer, Latest, int]) -> None:
    """The header-only batch of the idempotent producer, rebuilt compressed batches; no `.cleaned`/`.swap` files left
    behind, and the cleaner checkpoint written."""
    server, _, end = cleaned
    headers = [header for _, _, header in scan_batches(server.broker.partition(TOPIC, 0).log, 0)]
    assert [h.producer_id >= 0 for h in headers if h.record_count == 0] == [True]
    assert {h.compression for h in headers} >= {Compression.GZIP, Compression.LZ4}
    assert sum(h.last_offset_delta + 1 for h in headers) < end  # gaps
    data_dir = server.broker.data_dir
    assert data_dir is not None
    directory = data_dir / f"{TOPIC}-0"
    names = [path.name for path in directory.iterdir()]
    assert not [name for name in names if name.endswith((".cleaned", ".swap"))]
    assert "cleaner-offset" in names


@pytest.mark.parametrize("version", [7, 8, 13])
def test_the_refusal_names_each_keyless_record_from_v8(
    cleaned: tuple[ThreadedServer, Latest, int], version: int
) -> None:
    """Produce v8+ carries Kafka's record_errors (the index of each keyless record in its batch) and message."""
    server, _, _ = cleaned
    records = build_batch([RecordToWrite(b"v", b"k"), RecordToWrite(b"v"), RecordToWrite(b"v")], now_ms=0)

    async def produce() -> Any:
        raw = await RawClient.connect(server.server)
        topic_field = {"topic_id": server.broker.topic(TOPIC).topic_id} if version >= 13 else {"name": TOPIC}
        topic = RawClient.nested(
            0,
            version,
            "TopicProduceData",
            **topic_field,
            partition_data=[RawClient.nested(0, version, "PartitionProduceData", index=0, records=records)],
        )
        try:
            return await raw.request(0, version, acks=-1, timeout=5000, topic_data=[topic])
        finally:
            raw.writer.close()

    answer = asyncio.run_coroutine_threadsafe(produce(), server.loop).result(30)
    partition = answer.responses[0].partition_responses[0]
    assert partition.error_code == KafkaError.INVALID_RECORD
    if version >= 8:
        assert [(e.batch_index, e.batch_index_error_message) for e in partition.record_errors] == [
            (i, f"Compacted topic cannot accept message without key in topic partition {TOPIC}-0.") for i in (1, 2)
        ]
        assert partition.error_message.startswith("One or more records have been rejected due to 2 record errors")
