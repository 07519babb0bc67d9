"""`producer.id.expiration.ms`: a partition forgets an idempotent or transactional producer whose last batch (or
marker) is older than it, unless the producer has a transaction open there; checked every
`producer.id.expiration.check.interval.ms` and once at start. A forgotten producer is a new one: its next batch is
accepted at any sequence, and a cleaning no longer keeps its last batch."""

from __future__ import annotations

import asyncio
import time

import pytest

import kafkalite
from kafkalite import errors
from kafkalite.broker.producer_state import ProducerStateTable
from kafkalite.protocol.records import RecordToWrite, build_batch, read_header

from .harness import BrokerFactory

TOPIC = "t"
HOUR_MS = 3_600_000


def batch(
    pid: int, sequence: int, timestamp_ms: int, *, key: bytes | None = None, transactional: bool = False
) -> bytes:
    return build_batch(
        [RecordToWrite(b"v%d" % sequence, key)],
        now_ms=timestamp_ms,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=sequence,
        transactional=transactional,
    )


def now_ms() -> int:
    return int(time.time() * 1000)


def test_the_table_forgets_producers_last_seen_at_or_before_the_cutoff_except_those_kept() -> None:
    table = ProducerStateTable()
    for pid, timestamp in ((1, 1000), (2, 2000), (3, 3000), (4, 1000)):
        table.observe(read_header(batch(pid, 0, timestamp)))
    table.observe_marker(5, 1, coordinator_epoch=0, timestamp=1000, offset=9)
    assert sorted(table.remove_expired(2000, keep={4})) == [1, 2, 5]
    assert sorted(table.entries()) == [3, 4]
    assert table.remove_expired(2000, keep=set()) == [4]


async def test_an_idle_producer_is_forgotten_and_its_next_batch_starts_anew(
    make_broker: BrokerFactory,
) -> None:
    async with make_broker(producer_id_expiration_ms=HOUR_MS) as broker:
        await broker.create_topic(TOPIC)
        idle, recent = (await broker.init_producer_id())[0], (await broker.init_producer_id())[0]
        await broker.produce(TOPIC, 0, batch(idle, 0, now_ms() - 2 * HOUR_MS))
        await broker.produce(TOPIC, 0, batch(recent, 0, now_ms()))
        gap = batch(idle, 7, now_ms())
        with pytest.raises(errors.OutOfOrderSequenceError):
            await broker.produce(TOPIC, 0, gap)
        assert broker.expire_producers() == 1
        assert set(broker.partition(TOPIC, 0).producers.entries()) == {recent}
        assert (await broker.produce(TOPIC, 0, gap)).base_offset == 2  # a producer id it does not know: any sequence
        with pytest.raises(errors.OutOfOrderSequenceError):  # the one it still knows keeps its checks
            await broker.produce(TOPIC, 0, batch(recent, 7, now_ms()))


async def test_a_producer_with_a_transaction_open_is_kept_until_it_ends(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await broker.init_producer_id("tx")
    assert (await broker.transactions.add_partitions("tx", pid, epoch, [(TOPIC, 0)])).error == 0
    old = now_ms() - 30 * 24 * HOUR_MS  # its record's own timestamp: a month old
    await broker.append(TOPIC, 0, batch(pid, 0, old, transactional=True), transactional_id="tx")
    assert broker.expire_producers() == 0
    assert (await broker.transactions.end_transaction("tx", pid, epoch, commit=True)).error == 0
    assert broker.expire_producers() == 0  # its marker, written now, is recent
    assert pid in broker.partition(TOPIC, 0).producers.entries()
    assert broker.expire_producers(now_ms=now_ms() + 2 * 24 * HOUR_MS) == 1


async def test_the_check_runs_on_its_interval_and_at_start(files: BrokerFactory) -> None:
    async with files(producer_id_expiration_ms=HOUR_MS) as broker:
        await broker.create_topic(TOPIC)
        pid = (await broker.init_producer_id())[0]
        await broker.produce(TOPIC, 0, batch(pid, 0, now_ms()))
    async with files(producer_id_expiration_ms=HOUR_MS) as broker:  # rebuilt from the log: recent, kept
        assert pid in broker.partition(TOPIC, 0).producers.entries()
    async with files(producer_id_expiration_ms=1) as broker:  # a restart after the expiration: forgotten at start
        assert broker.partition(TOPIC, 0).producers.entries() == {}
    async with files(producer_id_expiration_ms=300, producer_id_expiration_check_interval_ms=20) as broker:
        fresh = (await broker.init_producer_id())[0]
        await broker.produce(TOPIC, 0, batch(fresh, 0, now_ms()))
        assert fresh in broker.partition(TOPIC, 0).producers.entries()
        for _ in range(200):
            if not broker.partition(TOPIC, 0).producers.entries():
                break
            await asyncio.sleep(0.02)
        assert broker.partition(TOPIC, 0).producers.entries() == {}


async def test_a_cleaning_drops_the_last_batch_of_a_forgotten_producer(files: BrokerFactory) -> None:
    compacted = {"cleanup.policy": "compact", "segment.bytes": "1024"}
    async with files(log_cleaner_enable=False, producer_id_expiration_ms=HOUR_MS) as broker:
        await broker.create_topic(TOPIC, 1, compacted)
        pid = (await broker.init_producer_id())[0]
        await broker.produce(TOPIC, 0, batch(pid, 0, now_ms(), key=b"k"))
        for n in range(60):  # later values of the same key, written without a producer id, roll segments
            await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"%d" % n + b"x" * 40, b"k")], now_ms=now_ms()))
        cleaner = broker.cleaner
        assert cleaner is not None
        assert await cleaner.clean_once() is not None
        first = read_header(broker.fetch(TOPIC, 0, 0, 1 << 20).records)
        assert (first.producer_id, first.record_count) == (pid, 0)  # kept header-only: the producer is known
        for n in range(60):
            await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"%d" % n + b"y" * 40, b"k")], now_ms=now_ms()))
        assert broker.expire_producers(now_ms=now_ms() + 2 * HOUR_MS) == 1
        assert await cleaner.clean_once() is not None
        first = read_header(broker.fetch(TOPIC, 0, 0, 1 << 20).records)
        assert first.producer_id == -1  # forgotten: nothing of it is kept
