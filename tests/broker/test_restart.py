"""What survives a restart of the file engine: topics with their configs, messages, committed offsets, the
idempotent-producer table and the compacted offsets log. (The memory engine keeps nothing, by design.)"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import kafkalite
from kafkalite import errors
from kafkalite.broker import OFFSETS_TOPIC
from kafkalite.protocol.records import RecordToWrite, build_batch

from .harness import BrokerFactory, consume, consumer

TOPIC = "orders"


async def test_restart_keeps_topics_configs_messages_and_committed_offsets(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=3, config={"retention.ms": "-1", "max.partition.messages": "50"})
        await broker.create_topic("other", partitions=1)
        await broker.alter_topic_config("other", {"segment.bytes": "1024"})
        await broker.create_partitions("other", 2)
        async with broker.producer() as producer:
            sent = [await producer.send(TOPIC, b"m-%d" % i, key=b"k-%d" % i) for i in range(30)]
        async with consumer(broker, TOPIC, "billing", enable_auto_commit=False) as c:
            first = await consume(c, 12)
            await c.commit()
            await consume(c, 5)  # read, never committed
        topic_id = broker.topic(TOPIC).topic_id
        cluster_id = broker.cluster_id

    async with files() as broker:
        assert broker.cluster_id == cluster_id
        assert set(broker.topics) >= {TOPIC, "other", OFFSETS_TOPIC}
        assert broker.topic(TOPIC).topic_id == topic_id
        assert broker.topic_by_id(topic_id) is broker.topic(TOPIC)  # the loaded topics are found by id too
        assert len(broker.topic(TOPIC).partitions) == 3
        assert broker.topic(TOPIC).config.overrides() == {"retention.ms": "-1", "max.partition.messages": "50"}
        assert broker.topic("other").config.overrides() == {"segment.bytes": "1024"}
        assert len(broker.topic("other").partitions) == 2
        committed = {(m.partition, m.offset) for m in first}
        async with consumer(broker, TOPIC, "billing") as c:
            rest = await consume(c, 18)
            assert await c.getmany(timeout=0.05) == []
        assert committed.isdisjoint((m.partition, m.offset) for m in rest)
        assert committed | {(m.partition, m.offset) for m in rest} == {(m.partition, m.offset) for m in sent}
        for p in range(3):  # resumes exactly after the committed offset of each partition
            done = [m.offset for m in first if m.partition == p]
            again = [m.offset for m in rest if m.partition == p]
            if again:
                assert again[0] == (max(done) + 1 if done else 0)
        async with consumer(broker, TOPIC, "new-group") as c:
            everything = await consume(c, 30)
        assert {(m.partition, m.offset, m.value) for m in everything} == {
            (m.partition, m.offset, b"m-%d" % i) for i, m in enumerate(sent)
        }
        async with broker.producer() as producer:  # appends continue after the recovered end
            meta = await producer.send(TOPIC, b"after", key=b"k-0")
        assert meta.offset == max(m.offset for m in sent if m.partition == meta.partition) + 1


async def test_deleted_topic_stays_deleted(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=2)
        await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"x")], now_ms=0))
        await broker.delete_topic(TOPIC)
    async with files() as broker:
        assert TOPIC not in broker.topics
        await broker.create_topic(TOPIC, partitions=1)
        assert broker.partition(TOPIC, 0).high_watermark == 0


async def test_idempotent_producer_state_survives_restart(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=1)
        pid, epoch = await broker.init_producer_id()
        first = build_batch(
            [RecordToWrite(b"a"), RecordToWrite(b"b")],
            now_ms=int(time.time() * 1000),
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
        )
        assert (await broker.produce(TOPIC, 0, first)).base_offset == 0
    async with files() as broker:
        assert (await broker.produce(TOPIC, 0, first)).base_offset == 0  # still recognised as a duplicate
        assert broker.partition(TOPIC, 0).high_watermark == 2
        gap = build_batch([RecordToWrite(b"c")], now_ms=0, producer_id=pid, producer_epoch=epoch, base_sequence=5)
        with pytest.raises(errors.OutOfOrderSequenceError):
            await broker.produce(TOPIC, 0, gap)
        new_pid, _ = await broker.init_producer_id()
        assert new_pid != pid  # ids are not handed out twice across restarts


async def test_compacted_offsets_log_keeps_the_latest_offsets_across_restart(files: BrokerFactory) -> None:
    async with files(offsets_segment_bytes=4096, log_cleaner_enable=False) as broker:
        for i in range(200):
            await broker.offsets.commit(f"g{i % 2}", TOPIC, i % 5, i)
        await broker.offsets.delete("g1", [(TOPIC, 0)])
        assert broker.cleaner is not None
        for _ in range(2):  # the second cleaning maps what the first left dirty (the map is per cleaning)
            await broker.cleaner.clean_once()
        assert broker.cleaner.cleanings >= 1
    async with files(offsets_segment_bytes=4096, log_cleaner_enable=False) as broker:
        table = {(g, p): broker.offsets.fetch(g, TOPIC, p) for g in ("g0", "g1") for p in range(5)}
        latest = {(f"g{i % 2}", i % 5): i for i in range(200)}
        del latest[("g1", 0)]
        assert {k: v.offset for k, v in table.items() if v is not None} == latest


async def test_dead_letters_and_replay_progress_survive_restart(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=1, config={"max.partition.messages": "1"})
        async with broker.producer(retry_backoff=0.001) as producer:
            await producer.send(TOPIC, b"fits")
            assert (await producer.send(TOPIC, b"overflow")).dead_lettered
            assert (await producer.send(TOPIC, b"overflow-2")).dead_lettered
        await broker.alter_topic_config(TOPIC, {"max.partition.messages": None})
        assert len(await broker.dead_letters.replay(TOPIC)) == 2
    async with files() as broker:
        assert [d.value for d in (await broker.dead_letters.list(TOPIC))] == [b"overflow", b"overflow-2"]
        assert len(await broker.dead_letters.replay(TOPIC)) == 0
        assert broker.partition(TOPIC, 0).high_watermark == 3


async def test_memory_engine_starts_empty() -> None:
    async with kafkalite.Broker(data_dir=None) as broker:
        await broker.create_topic(TOPIC)
    async with kafkalite.Broker(data_dir=None) as broker:
        assert TOPIC not in broker.topics


@pytest.mark.parametrize("cleaned", [False, True])
async def test_concurrent_commits_are_replayed_as_committed(files: BrokerFactory, cleaned: bool) -> None:
    """Commits in flight together (each awaiting its fsync), with a cleaning among them or not: the offsets a restart
    replays are the latest of each key, the same the running broker answered."""
    expected = {(f"g{i % 3}", i % 2): i for i in range(300)}
    async with files(offsets_segment_bytes=2048, log_cleaner_enable=False) as broker:
        assert broker.cleaner is not None
        commits = [broker.offsets.commit(f"g{i % 3}", TOPIC, i % 2, i) for i in range(300)]
        cleanings = [broker.cleaner.clean_once() for _ in range(3)] if cleaned else []
        await asyncio.gather(*commits[:150], *cleanings, *commits[150:])
        live = {(g, p): broker.offsets.fetch(g, TOPIC, p) for g, p in expected}
        assert {k: v.offset for k, v in live.items() if v} == expected
    async with files(offsets_segment_bytes=2048, log_cleaner_enable=False) as broker:
        replayed = {(g, p): broker.offsets.fetch(g, TOPIC, p) for g, p in expected}
        assert {k: v.offset for k, v in replayed.items() if v} == expected


async def test_a_second_broker_over_the_same_data_directory_is_refused(files: BrokerFactory) -> None:
    """One broker per data directory, as Kafka locks its log directories: a second `Broker` (here in the same
    process) is refused before it reads a file, the first keeps working, and after its close the directory is free."""
    async with files() as first:
        await first.create_topic(TOPIC, partitions=1)
        second = files()
        with pytest.raises(
            errors.DataDirectoryInUseError, match=f"in use by another broker \\(process {os.getpid()}\\)"
        ):
            await second.start()
        assert second.topics == {}  # refused before loading anything
        async with first.producer() as producer:
            assert (await producer.send(TOPIC, b"still mine")).offset == 0
    async with files() as after:
        assert after.partition(TOPIC, 0).high_watermark == 1


async def test_a_cancelled_start_keeps_the_directory_locked_until_its_loading_thread_returns(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The files are loaded (and a torn tail cut off) on a thread, which cancelling `start` cannot stop: the
    cancelled start waits for it, closes what it opened and only then unlocks the directory, so a second broker never
    works on files the first is still recovering. The cancelled broker stays closed."""
    async with files() as before:
        await before.create_topic(TOPIC, partitions=2)
        async with before.producer() as producer:
            await producer.send(TOPIC, b"kept", partition=1)
    loading, go_on = threading.Event(), threading.Event()
    load = kafkalite.Broker._load_from_disk

    def held_load(self: kafkalite.Broker, store: Any) -> None:
        loading.set()
        go_on.wait(10)
        load(self, store)

    monkeypatch.setattr(kafkalite.Broker, "_load_from_disk", held_load)
    broker = files()
    start = asyncio.create_task(broker.start())
    assert await asyncio.to_thread(loading.wait, 10)
    start.cancel()
    await asyncio.sleep(0.1)
    for task in asyncio.all_tasks() - {asyncio.current_task()}:  # and again, every task, as `asyncio.run` ends
        task.cancel()
    await asyncio.sleep(0.1)
    assert not start.done()  # waiting for its thread
    with pytest.raises(errors.DataDirectoryInUseError):
        await files().start()
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await start
    assert broker.topics  # it had loaded them
    assert _open_files_under(tmp_path) == []
    with pytest.raises(errors.ClosedError):
        await broker.start()
    async with files() as after:
        assert after.partition(TOPIC, 1).high_watermark == 1


def _open_files_under(directory: Path) -> list[str]:
    """This process's open descriptors of files under `directory` (Linux's /proc)."""
    opened = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone by now
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(f"{directory}/"):
                opened.append(target)
    return opened


async def test_the_data_directory_is_free_after_a_close_that_failed_and_a_closed_broker_does_not_start_again(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = files()
    await broker.start()
    await broker.create_topic(TOPIC, partitions=1)

    def broken_close() -> None:
        raise OSError("the disk went away")

    monkeypatch.setattr(broker.partition(TOPIC, 0).log, "close", broken_close)
    with pytest.raises(OSError, match="the disk went away"):
        await broker.close()
    with pytest.raises(errors.ClosedError):
        await broker.start()
    monkeypatch.undo()
    async with files() as after:  # the lock went with the failed close
        assert after.partition(TOPIC, 0).high_watermark == 0
