"""Compacted topics in the broker, on both engines: configs, the keyless-record refusal, and the cleaner thread at
work while producers append and consumers fetch."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import kafkalite
from kafkalite import errors
from kafkalite.broker.log_cleaner import LogCleaner
from kafkalite.broker.log_reader import scan_records
from kafkalite.broker.partition import Partition
from kafkalite.broker.topic import log_settings
from kafkalite.config.topic import TopicConfig
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.storage import PartitionLog
from kafkalite.storage.file_ops import FileOps

from .harness import TIMEOUT_S, BrokerFactory, consumer

TOPIC = "changelog"
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.05"}


@pytest.mark.parametrize("policy", ["compact", "delete", "compact,delete", "delete,compact"])
async def test_cleanup_policies_are_accepted(broker: kafkalite.Broker, policy: str) -> None:
    topic = await broker.create_topic(TOPIC, 1, {"cleanup.policy": policy})
    config = topic.partitions[0].log.config
    assert (config.compact, config.delete) == ("compact" in policy, "delete" in policy)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("cleanup.policy", "compaction"),
        ("cleanup.policy", "compact,compact"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.compaction.lag.ms", "-1"),
        ("max.compaction.lag.ms", "0"),
        ("delete.retention.ms", "soon"),
    ],
)
async def test_bad_compaction_configs_are_refused_and_logged(
    broker: kafkalite.Broker, name: str, value: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(errors.InvalidConfigError):
        await broker.create_topic(TOPIC, 1, {name: value})
    assert f"Refused to create topic={TOPIC}" in caplog.text


async def test_a_compacted_topic_refuses_keyless_records(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, 1, COMPACTED)
    with pytest.raises(errors.InvalidRecordError, match="without key"):
        await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"v", b"k"), RecordToWrite(b"v")], now_ms=0))
    assert broker.partition(TOPIC, 0).high_watermark == 0
    await broker.alter_topic_config(TOPIC, {"cleanup.policy": "delete"})
    await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"v")], now_ms=0))


async def test_retention_leaves_a_compact_only_topic_alone(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, 1, {**COMPACTED, "retention.ms": "1"})
    for n in range(100):
        await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"v" * 50, b"k%d" % n)], now_ms=0))
    assert broker.apply_retention(10**13) == 0
    assert broker.partition(TOPIC, 0).log_start_offset == 0


async def test_compaction_under_live_produce_and_fetch(make_broker: BrokerFactory) -> None:
    """The cleaner thread cleans again and again while two producers append and a consumer reads: the consumer sees
    offsets only increase, each key's values in write order, and the log ends holding each key's latest value."""
    async with make_broker(log_cleaner_backoff_s=0.01) as broker:
        await broker.create_topic(TOPIC, 1, COMPACTED)
        latest: dict[bytes, bytes] = {}
        written = asyncio.Event()

        cleaner = broker.cleaner
        assert cleaner is not None

        async def produce(writer: int) -> None:
            n = 0
            while n < 600 or cleaner.cleanings < 2:  # write until the cleaner has swapped twice under the writes
                assert n < 100_000, "the cleaner never cleaned while the producers wrote"
                key = b"k%d" % (n % 25)
                value = b"%d:%d:" % (writer, n) + b"x" * 60
                await broker.produce(TOPIC, 0, build_batch([RecordToWrite(value, key)], now_ms=n))
                latest[key] = value  # the appends of one task are ordered; the last append of a key wins
                if n % 50 == 0:
                    await asyncio.sleep(0.001)
                n += 1

        seen: list[kafkalite.Message] = []

        async def read() -> None:
            async with consumer(broker, TOPIC, None) as reader:
                while not (
                    written.is_set() and seen and seen[-1].offset == broker.partition(TOPIC, 0).high_watermark - 1
                ):
                    seen.extend(await reader.getmany(timeout=0.05))

        reading = asyncio.create_task(read())
        await asyncio.gather(produce(1), produce(2))
        written.set()
        await asyncio.wait_for(reading, TIMEOUT_S * 3)
        offsets = [message.offset for message in seen]
        assert offsets == sorted(set(offsets))
        for writer in (1, 2):  # per writer and key, values arrive in the order they were written
            for key in {m.key for m in seen}:
                numbers = [
                    int(m.value.split(b":")[1]) for m in seen if m.key == key and m.value.startswith(b"%d:" % writer)
                ]
                assert numbers == sorted(numbers)
        while await cleaner.clean_once() is not None:  # let the cleaner catch up with the last writes
            pass
        log = broker.partition(TOPIC, 0).log
        final: dict[bytes | None, bytes | None] = {}
        for record in scan_records(log, 0):
            final[record.key] = record.value
        assert final == latest
        assert log.size_bytes < 4 * 2048  # the latest value of 25 keys, and the active segment


async def test_closing_the_broker_stops_a_cleaning_and_leaves_no_half_written_segment(
    make_broker: BrokerFactory,
) -> None:
    broker = make_broker(log_cleaner_enable=False, log_cleaner_io_max_bytes_per_second=20_000)
    await broker.start()
    await broker.create_topic(TOPIC, 1, COMPACTED)
    for n in range(400):
        await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"v" * 100, b"k%d" % (n % 7))], now_ms=n))
    assert broker.cleaner is not None
    cleaning = asyncio.create_task(broker.cleaner.clean_once())
    await asyncio.sleep(0.3)  # at 20 kB/s the cleaning of ~60 kB is still running
    assert not cleaning.done()
    await asyncio.wait_for(broker.close(), TIMEOUT_S)
    assert await cleaning is None
    if broker.data_dir is not None:
        leftovers = [
            p.name for p in (broker.data_dir / f"{TOPIC}-0").iterdir() if p.name.endswith((".cleaned", ".swap"))
        ]
        assert leftovers == []


class SlowFlushOps(FileOps):
    """Real file operations whose fsyncs wait for `flushes` to be set: a disk slower than the writes."""

    def __init__(self) -> None:
        self.flushes = threading.Event()

    def fsync(self, fd: int) -> None:
        self.flushes.wait(TIMEOUT_S)
        super().fsync(fd)


async def test_a_cleaning_right_after_the_writes_waits_for_their_flush_and_reaches_every_closed_segment(
    tmp_path: Path,
) -> None:
    """The file engine flushes each rolled segment in a worker thread, and only then lets a cleaning rewrite it;
    `clean_once` waits for the flushes already under way, so it cleans every closed segment however slow the disk."""
    ops = SlowFlushOps()
    config = TopicConfig(COMPACTED)
    partition = Partition(
        TOPIC, 0, PartitionLog.open(tmp_path / f"{TOPIC}-0", log_settings(config), file_ops=ops), config, lambda: 0
    )
    cleaner = LogCleaner(lambda: [partition])
    try:
        for n in range(200):
            await partition.append(build_batch([RecordToWrite(b"v" * 100, b"k%d" % (n % 7))], now_ms=n))
        closed_segments = partition.log.segment_count - 1
        assert closed_segments > 5
        cleaning = asyncio.create_task(cleaner.clean_once())
        await asyncio.sleep(0.1)
        assert not cleaning.done()  # waiting for the flush
        ops.flushes.set()
        report = await asyncio.wait_for(cleaning, TIMEOUT_S)
        assert report is not None
        assert report.swapped
        assert report.stats.cleanable_segments == closed_segments
        cleaned = [
            record.key for record in scan_records(partition.log, 0) if record.offset < report.stats.first_uncleanable
        ]
        assert sorted(cleaned) == sorted(b"k%d" % k for k in range(7))  # the latest record of each key
    finally:
        ops.flushes.set()
        await cleaner.close()
        partition.log.close()
