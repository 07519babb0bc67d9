"""The domain broker on both engines: the append path's checks, idempotent producers, timestamps, size limits,
DeleteRecords, ListOffsets, topic admin, per-partition locks, and the committed-offset log."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from crc32c import crc32c

import kafkalite
from kafkalite import errors
from kafkalite.broker import EARLIEST, LATEST, MAX_TIMESTAMP, OFFSETS_TOPIC
from kafkalite.broker.log_reader import scan_records
from kafkalite.protocol.records import RecordToWrite, build_batch, iter_records, read_header

from .harness import TIMEOUT_S, BrokerFactory, consume, consumer

TOPIC = "t"


def batch(*values: bytes, timestamps: list[int] | None = None, **producer: int) -> bytes:
    stamps = timestamps or [None] * len(values)  # type: ignore[list-item]
    records = [RecordToWrite(v, None, (), ts) for v, ts in zip(values, stamps, strict=True)]
    return build_batch(records, now_ms=int(time.time() * 1000), **producer)


def values_in(broker: kafkalite.Broker, partition: int = 0, offset: int = 0) -> list[bytes | None]:
    data = broker.fetch(TOPIC, partition, offset, 1 << 20).records
    out = []
    pos = 0
    while pos < len(data):
        out.extend(r.value for r in iter_records(data, pos) if r.offset >= offset)
        pos += read_header(data, pos).size
    return out


# --- the append path -----------------------------------------------------------------------------------------------


async def test_produce_assigns_consecutive_offsets_and_fetch_returns_the_batches(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    first = await broker.produce(TOPIC, 0, batch(b"a", b"b", b"c"))
    second = await broker.produce(TOPIC, 0, batch(b"d"))
    assert (first.base_offset, first.last_offset, second.base_offset, second.last_offset) == (0, 2, 3, 3)
    assert first.log_append_time_ms == -1
    assert values_in(broker) == [b"a", b"b", b"c", b"d"]
    assert values_in(broker, offset=2) == [b"c", b"d"]
    assert broker.fetch(TOPIC, 0, 4, 1000).records == b""


@pytest.mark.parametrize("log_append_time", [False, True])
async def test_several_batches_in_one_produce_are_appended_in_order_and_the_request_is_left_as_it_is(
    broker: kafkalite.Broker, log_append_time: bool
) -> None:
    """Each batch goes to the log as a view of the request's bytes (or, for LogAppendTime, a stamped copy); the
    request's own bytes keep base offset 0 in every batch."""
    config = {"message.timestamp.type": "LogAppendTime"} if log_append_time else {}
    await broker.create_topic(TOPIC, partitions=1, config=config)
    await broker.produce(TOPIC, 0, batch(b"first"))
    request = bytearray(batch(b"a", b"b") + batch(b"c") + batch(b"d", b"e", b"f"))
    sent = bytes(request)
    result = await broker.produce(TOPIC, 0, request)
    assert (result.base_offset, result.last_offset) == (1, 6)
    assert request == sent
    data = broker.fetch(TOPIC, 0, 1, 1 << 20).records
    headers = []
    pos = 0
    while pos < len(data):
        headers.append(read_header(data, pos))
        pos += headers[-1].size
    assert [(h.base_offset, h.last_offset) for h in headers] == [(1, 2), (3, 3), (4, 6)]
    assert [h.log_append_time for h in headers] == [log_append_time] * 3
    assert values_in(broker, offset=1) == [b"a", b"b", b"c", b"d", b"e", b"f"]


@pytest.mark.parametrize("where", ["crc", "length", "truncated", "magic", "second-batch"])
async def test_corrupt_batch_is_refused_and_nothing_is_appended(broker: kafkalite.Broker, where: str) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    await broker.produce(TOPIC, 0, batch(b"before"))
    good = bytearray(batch(b"payload-1", b"payload-2"))
    if where == "crc":
        good[-1] ^= 0xFF
    elif where == "length":
        good[8:12] = (len(good) + 100).to_bytes(4, "big")
    elif where == "truncated":
        good = good[:-3]
    elif where == "magic":
        good[16] = 1
    else:
        broken = bytearray(batch(b"x"))
        broken[-1] ^= 0xFF
        good += broken
    with pytest.raises(errors.CorruptRecordError):
        await broker.produce(TOPIC, 0, bytes(good))
    assert broker.partition(TOPIC, 0).high_watermark == 1
    assert values_in(broker) == [b"before"]
    await broker.produce(TOPIC, 0, batch(b"after"))
    assert values_in(broker) == [b"before", b"after"]


async def test_empty_produce_is_refused(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    with pytest.raises(errors.CorruptRecordError):
        await broker.produce(TOPIC, 0, b"")


async def test_produce_to_unknown_topic_or_partition(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    with pytest.raises(errors.UnknownTopicError):
        await broker.produce("missing", 0, batch(b"x"))
    with pytest.raises(errors.UnknownPartitionError):
        await broker.produce(TOPIC, 2, batch(b"x"))


async def test_topics_are_found_by_id_and_no_topic_by_a_null_or_zero_id(broker: kafkalite.Broker) -> None:
    topic = await broker.create_topic(TOPIC, partitions=1)
    assert broker.topic_by_id(uuid.UUID(str(topic.topic_id))) is topic  # an equal id, not the same object
    for unknown in (None, uuid.UUID(int=0), uuid.uuid4()):
        with pytest.raises(errors.UnknownTopicError):
            broker.topic_by_id(unknown)
    await broker.delete_topic(TOPIC)
    with pytest.raises(errors.UnknownTopicError):
        broker.topic_by_id(topic.topic_id)


async def test_idempotent_producer_duplicates_are_acknowledged_without_a_second_append(
    broker: kafkalite.Broker,
) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    pid, epoch = await broker.init_producer_id()
    await broker.produce(TOPIC, 0, batch(b"other"))
    first = batch(b"a", b"b", producer_id=pid, producer_epoch=epoch, base_sequence=0)
    second = batch(b"c", producer_id=pid, producer_epoch=epoch, base_sequence=2)
    assert (await broker.produce(TOPIC, 0, first)).base_offset == 1
    assert (await broker.produce(TOPIC, 0, second)).base_offset == 3
    again = await broker.produce(TOPIC, 0, first)  # a retry after a lost response
    assert again.base_offset == 1
    assert (await broker.produce(TOPIC, 0, second)).base_offset == 3
    assert broker.partition(TOPIC, 0).high_watermark == 4
    assert values_in(broker) == [b"other", b"a", b"b", b"c"]

    gap = batch(b"e", producer_id=pid, producer_epoch=epoch, base_sequence=5)
    with pytest.raises(errors.OutOfOrderSequenceError):
        await broker.produce(TOPIC, 0, gap)
    bumped_pid, bumped = await broker.init_producer_id(producer_id=pid, producer_epoch=epoch)
    assert (bumped_pid, bumped) == (pid, epoch + 1)
    await broker.produce(TOPIC, 0, batch(b"f", producer_id=pid, producer_epoch=bumped, base_sequence=0))
    with pytest.raises(errors.InvalidProducerEpochError):
        await broker.produce(TOPIC, 0, batch(b"g", producer_id=pid, producer_epoch=epoch, base_sequence=3))
    assert broker.partition(TOPIC, 0).high_watermark == 5


async def test_producer_ids_are_distinct(broker: kafkalite.Broker) -> None:
    ids = {(await broker.init_producer_id())[0] for _ in range(20)}
    assert len(ids) == 20
    txn = await broker.init_producer_id("txn-1")
    assert await broker.init_producer_id("txn-1") == (txn[0], txn[1] + 1)


async def test_log_append_time_topic_stamps_the_broker_clock(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    result = await broker.produce(TOPIC, 0, batch(b"a", b"b", timestamps=[1000, 2000]))
    after = int(time.time() * 1000)
    assert before <= result.log_append_time_ms <= after
    data = broker.fetch(TOPIC, 0, 0, 1 << 20).records
    assert read_header(data).log_append_time
    assert [r.timestamp for r in iter_records(data)] == [result.log_append_time_ms] * 2
    async with consumer(broker, TOPIC, None) as c:
        assert [m.timestamp for m in await consume(c, 2)] == [result.log_append_time_ms] * 2


async def test_max_message_bytes(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1, config={"max.message.bytes": "200"})
    await broker.produce(TOPIC, 0, batch(b"x" * 50))
    with pytest.raises(errors.RecordTooLargeError, match=r"max\.message\.bytes"):
        await broker.produce(TOPIC, 0, batch(b"x" * 300))
    assert broker.partition(TOPIC, 0).high_watermark == 1
    async with broker.producer() as producer:
        with pytest.raises(errors.RecordTooLargeError):  # not retriable: reaches the caller, no dead letter
            await producer.send(TOPIC, b"y" * 300)
    assert TOPIC + ".DLQ" not in broker.topics


async def test_capacity_limits_refuse_with_a_retriable_error(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2, config={"max.partition.messages": "3"})
    await broker.produce(TOPIC, 0, batch(b"a", b"b"))
    with pytest.raises(errors.PartitionFullError) as refused:
        await broker.produce(TOPIC, 0, batch(b"c", b"d"))
    assert refused.value.retriable
    assert broker.partition(TOPIC, 0).high_watermark == 2
    await broker.produce(TOPIC, 0, batch(b"c"))
    await broker.produce(TOPIC, 1, batch(b"a", b"b", b"c"))  # the cap is per partition


async def test_delete_records(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    for i in range(10):
        await broker.produce(TOPIC, 0, batch(b"%d" % i))
    assert await broker.delete_records(TOPIC, 0, 4) == 4
    assert broker.list_offset(TOPIC, 0, EARLIEST) == (4, -1)
    assert values_in(broker, offset=4)[0] == b"4"
    with pytest.raises(errors.OffsetOutOfRangeError):
        broker.fetch(TOPIC, 0, 2, 1000)
    async with consumer(broker, TOPIC, "new") as c:
        assert [m.offset for m in await consume(c, 6)] == [4, 5, 6, 7, 8, 9]
    assert await broker.delete_records(TOPIC, 0, 2) == 4  # below the start: nothing to do
    with pytest.raises(errors.OffsetOutOfRangeError):
        await broker.delete_records(TOPIC, 0, 11)
    assert await broker.delete_records(TOPIC, 0, -1) == 10
    assert broker.list_offset(TOPIC, 0, EARLIEST) == (10, -1)
    assert broker.list_offset(TOPIC, 0, LATEST) == (10, -1)


async def test_consumer_reset_when_its_committed_offset_was_deleted(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    for i in range(6):
        await broker.produce(TOPIC, 0, batch(b"%d" % i))
    async with consumer(broker, TOPIC, "g", enable_auto_commit=False) as c:
        await consume(c, 2)
        await c.commit()
    await broker.delete_records(TOPIC, 0, 4)
    async with consumer(broker, TOPIC, "g") as c:
        assert [m.offset for m in await consume(c, 2)] == [4, 5]


async def test_list_offsets(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    assert broker.list_offset(TOPIC, 0, EARLIEST) == (0, -1)
    assert broker.list_offset(TOPIC, 0, LATEST) == (0, -1)
    assert broker.list_offset(TOPIC, 0, MAX_TIMESTAMP) == (-1, -1)
    assert broker.list_offset(TOPIC, 0, 0) == (-1, -1)
    await broker.produce(TOPIC, 0, batch(b"a", timestamps=[100]))
    await broker.produce(TOPIC, 0, batch(b"b", b"c", b"d", timestamps=[300, 200, 250]))
    await broker.produce(TOPIC, 0, batch(b"e", timestamps=[150]))
    assert broker.list_offset(TOPIC, 0, EARLIEST) == (0, -1)
    assert broker.list_offset(TOPIC, 0, LATEST) == (5, -1)  # the next offset, in records
    assert broker.list_offset(TOPIC, 0, 50) == (0, 100)
    assert broker.list_offset(TOPIC, 0, 100) == (0, 100)
    assert broker.list_offset(TOPIC, 0, 101) == (1, 300)  # the first record with timestamp >= target
    assert broker.list_offset(TOPIC, 0, 300) == (1, 300)
    assert broker.list_offset(TOPIC, 0, 301) == (-1, -1)
    assert broker.list_offset(TOPIC, 0, MAX_TIMESTAMP) == (1, 300)


async def test_create_partitions_grows_a_topic(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    await broker.produce(TOPIC, 1, batch(b"old"))
    await broker.create_partitions(TOPIC, 4, validate_only=True)
    assert len(broker.topic(TOPIC).partitions) == 2
    await broker.create_partitions(TOPIC, 4)
    assert [p.index for p in broker.topic(TOPIC).partitions] == [0, 1, 2, 3]
    assert (await broker.produce(TOPIC, 3, batch(b"new"))).base_offset == 0
    assert values_in(broker, 1) == [b"old"]
    for bad in (4, 3, 0):
        with pytest.raises(errors.InvalidConfigError):
            await broker.create_partitions(TOPIC, bad)
    async with broker.producer() as producer:
        assert {(await producer.send(TOPIC, b"v")).partition for _ in range(4)} == {0, 1, 2, 3}


async def test_alter_topic_config_is_validated_all_or_nothing(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1, config={"retention.ms": "1000"})
    with pytest.raises(errors.InvalidConfigError):
        await broker.alter_topic_config(TOPIC, {"max.partition.messages": "5", "retention.ms": "never"})
    assert broker.topic(TOPIC).config.overrides() == {"retention.ms": "1000"}
    await broker.alter_topic_config(TOPIC, {"max.partition.messages": "1", "retention.ms": None})
    assert broker.topic(TOPIC).config.overrides() == {"max.partition.messages": "1"}
    await broker.produce(TOPIC, 0, batch(b"a"))
    with pytest.raises(errors.PartitionFullError):
        await broker.produce(TOPIC, 0, batch(b"b"))


async def test_every_append_checks_the_topic_configs_as_they_are_now(broker: kafkalite.Broker) -> None:
    """A partition keeps the limits it checks between config changes; each change is seen by the next append."""
    await broker.create_topic(TOPIC, partitions=1)
    first = await broker.produce(TOPIC, 0, batch(b"a" * 200))
    assert (first.base_offset, first.log_append_time_ms) == (0, -1)
    await broker.alter_topic_config(TOPIC, {"max.message.bytes": "100"})
    with pytest.raises(errors.RecordTooLargeError):
        await broker.produce(TOPIC, 0, batch(b"b" * 200))
    await broker.alter_topic_config(TOPIC, {"max.message.bytes": None, "message.timestamp.type": "LogAppendTime"})
    stamped = await broker.produce(TOPIC, 0, batch(b"c" * 200))
    assert stamped.base_offset == 1
    assert stamped.log_append_time_ms > 0
    await broker.alter_topic_config(TOPIC, {"message.timestamp.type": None, "max.partition.bytes": "1"})
    with pytest.raises(errors.PartitionFullError):
        await broker.produce(TOPIC, 0, batch(b"d"))
    await broker.alter_topic_config(TOPIC, {"max.partition.bytes": None})
    assert (await broker.produce(TOPIC, 0, batch(b"e"))).log_append_time_ms == -1


async def test_delete_topic_and_create_it_again(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    await broker.produce(TOPIC, 0, batch(b"a"))
    await broker.delete_topic(TOPIC)
    assert TOPIC not in broker.topics
    with pytest.raises(errors.UnknownTopicError):
        broker.fetch(TOPIC, 0, 0, 100)
    await broker.create_topic(TOPIC, partitions=1)
    assert broker.partition(TOPIC, 0).high_watermark == 0
    with pytest.raises(errors.UnknownTopicError):
        await broker.delete_topic(OFFSETS_TOPIC)


async def test_auto_create_on_ensure_topic(make_broker: BrokerFactory) -> None:
    async with make_broker(default_partitions=3) as broker:
        topic = await broker.ensure_topic("auto")
        assert len(topic.partitions) == 3
        assert await broker.ensure_topic("auto") is topic
    async with make_broker(auto_create_topics=False) as broker:
        with pytest.raises(errors.UnknownTopicError):
            await broker.ensure_topic("other")


# --- concurrency ------------------------------------------------------------------------------------------------


async def test_writers_to_different_partitions_do_not_wait_for_each_other(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    held = broker.partition(TOPIC, 0)
    async with held.lock:
        blocked = asyncio.create_task(broker.produce(TOPIC, 0, batch(b"waits")))
        async with asyncio.timeout(TIMEOUT_S):
            other = await broker.produce(TOPIC, 1, batch(b"free"))
        assert other.base_offset == 0
        await asyncio.sleep(0.05)
        assert not blocked.done(), "a produce to the locked partition must wait for its lock"
    async with asyncio.timeout(TIMEOUT_S):
        assert (await blocked).base_offset == 0


async def test_concurrent_writers_to_one_partition_get_distinct_ordered_offsets(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with asyncio.timeout(TIMEOUT_S):
        results = await asyncio.gather(*(broker.produce(TOPIC, 0, batch(b"%d" % i, b"x")) for i in range(200)))
    bases = sorted(r.base_offset for r in results)
    assert bases == list(range(0, 400, 2))
    values = values_in(broker)
    assert len(values) == 400
    for r in results:  # each batch's records stay together, in order
        assert values[r.base_offset + 1] == b"x"


async def test_fetch_long_poll_wakes_on_append(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    partitions = [broker.partition(TOPIC, 0), broker.partition(TOPIC, 1)]
    loop = asyncio.get_running_loop()
    began = loop.time()
    waiting = asyncio.create_task(broker.wait_for_appends(partitions, 5.0))
    await asyncio.sleep(0.01)
    await broker.produce(TOPIC, 1, batch(b"wake"))
    async with asyncio.timeout(TIMEOUT_S):
        await waiting
    assert loop.time() - began < 2.0
    began = loop.time()
    await broker.wait_for_appends(partitions, 0.05)  # no data: returns at the timeout
    assert loop.time() - began >= 0.04


# --- committed offsets -----------------------------------------------------------------------------------------


async def test_committed_offsets_per_group(broker: kafkalite.Broker) -> None:
    await broker.offsets.commit("a", TOPIC, 0, 5, metadata="m")
    await broker.offsets.commit("b", TOPIC, 0, 7)
    await broker.offsets.commit("a", TOPIC, 0, 6)
    a = broker.offsets.fetch("a", TOPIC, 0)
    assert a is not None
    assert (a.offset, a.metadata) == (6, "")
    assert broker.offsets.committed("b") == {(TOPIC, 0): broker.offsets.fetch("b", TOPIC, 0)}
    assert broker.offsets.fetch("c", TOPIC, 0) is None
    assert {"a", "b"} <= broker.offsets.groups()
    await broker.offsets.delete("a")
    assert broker.offsets.fetch("a", TOPIC, 0) is None


async def test_offsets_log_is_compacted_and_keeps_the_latest(make_broker: BrokerFactory) -> None:
    async with make_broker(offsets_segment_bytes=2048, log_cleaner_enable=False) as broker:
        for i in range(100):
            await broker.offsets.commit("g", TOPIC, i % 3, i)
        offsets_partition = broker.partition(OFFSETS_TOPIC, 0)
        before = offsets_partition.log.size_bytes
        assert broker.cleaner is not None
        report = await broker.cleaner.clean_once()
        assert report is not None
        assert (report.swapped, report.topic) == (True, OFFSETS_TOPIC)
        assert offsets_partition.log.size_bytes < before / 2
        assert [broker.offsets.fetch("g", TOPIC, p).offset for p in range(3)] == [99, 97, 98]  # type: ignore[union-attr]
        records = list(scan_records(offsets_partition.log, 0))
        assert [r.offset for r in records] == sorted({r.offset for r in records})
        assert len(records) < 50  # the cleaned section holds one record per key; the active segment the rest


async def test_deleting_some_offsets_takes_keys_from_any_iterable(broker: kafkalite.Broker) -> None:
    for partition in range(3):
        await broker.offsets.commit("g", TOPIC, partition, 10 + partition)
    await broker.offsets.delete("g", ((TOPIC, p) for p in (0, 1)))  # a generator: read once, not once per key
    assert [broker.offsets.fetch("g", TOPIC, p) is None for p in range(3)] == [True, True, False]


# --- review fixes: control batches, retention ----------------------------------------------------------------------


async def test_a_produced_control_batch_is_refused(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    control = bytearray(batch(b"marker"))
    attributes = int.from_bytes(control[21:23], "big") | 0x20  # the control bit: only a broker writes such batches
    control[21:23] = attributes.to_bytes(2, "big")
    control[17:21] = crc32c(bytes(control[21:])).to_bytes(4, "big")
    with pytest.raises(errors.InvalidRecordError):
        await broker.produce(TOPIC, 0, bytes(control))
    assert broker.partition(TOPIC, 0).high_watermark == 0


async def test_a_failed_retention_pass_does_not_end_retention(
    make_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = 0

    def failing_pass(now_ms: int | None = None) -> int:
        nonlocal passes
        passes += 1
        raise OSError("segment file busy")

    async with make_broker(retention_check_interval_s=0.01) as broker:
        monkeypatch.setattr(broker, "apply_retention", failing_pass)
        deadline = time.monotonic() + TIMEOUT_S
        while passes < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    assert passes >= 2, "the retention task died with its first failed pass"
