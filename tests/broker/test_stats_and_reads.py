"""The broker's counters for `/metrics` and its record reads for the console, on both storage engines."""

from __future__ import annotations

import kafkalite
from kafkalite.protocol.records import RecordToWrite, build_batch


def batch_of(count: int, start: int = 0) -> bytes:
    return build_batch([RecordToWrite(b"value-%d" % i, b"key-%d" % i) for i in range(start, start + count)], now_ms=1)


async def test_partition_counts_bytes_and_records_per_append_and_bytes_per_read(broker: kafkalite.Broker) -> None:
    await broker.create_topic("counted", 2)
    first, second = batch_of(3), batch_of(5, 3)
    await broker.produce("counted", 1, first)
    await broker.produce("counted", 1, second)
    partition = broker.partition("counted", 1)
    assert partition.messages_in == 8
    assert partition.bytes_in == len(first) + len(second) == partition.log.size_bytes
    assert broker.partition("counted", 0).bytes_in == 0
    data = broker.fetch("counted", 1, 0, 1 << 20)
    assert partition.bytes_out == len(data.records) == len(first) + len(second)


async def test_refused_appends_count_nothing(broker: kafkalite.Broker) -> None:
    await broker.create_topic("capped", 1, {"max.partition.messages": "2"})
    try:
        await broker.produce("capped", 0, batch_of(3))
    except kafkalite.errors.PartitionFullError:
        pass
    partition = broker.partition("capped", 0)
    assert (partition.bytes_in, partition.messages_in) == (0, 0)


async def test_read_records_is_one_window_from_an_offset(broker: kafkalite.Broker) -> None:
    await broker.create_topic("windowed", 1)
    for start in range(0, 50, 10):
        await broker.produce("windowed", 0, batch_of(10, start))
    window = broker.read_records("windowed", 0, 23, 5)
    assert [r.offset for r in window] == [23, 24, 25, 26, 27]
    assert window[0].key == b"key-23"
    assert broker.read_records("windowed", 0, 48, 10)[-1].offset == 49
    assert broker.read_records("windowed", 0, 50, 10) == []
    assert broker.read_records("windowed", 0, 0, 0) == []
    await broker.delete_records("windowed", 0, 30)
    assert broker.read_records("windowed", 0, 5, 1)[0].offset == 30  # clamped to the log start
    assert broker.partition("windowed", 0).bytes_out == 0  # console reads are not fetches


async def test_produce_record_appends_one_durable_record(broker: kafkalite.Broker) -> None:
    await broker.create_topic("by-hand", 2)
    result = await broker.produce_record("by-hand", 1, b'{"a": 1}', b"k", [("h", b"v"), ("n", None)])
    assert result.base_offset == 0
    [record] = broker.read_records("by-hand", 1, 0, 10)
    assert (record.key, record.value, record.headers) == (b"k", b'{"a": 1}', (("h", b"v"), ("n", None)))
    assert (
        broker.size_bytes()
        == broker.partition("by-hand", 1).log.size_bytes + broker.partition("__consumer_offsets", 0).log.size_bytes
    )


async def test_retention_passes_are_counted(broker: kafkalite.Broker) -> None:
    before = broker.stats.retention.passes
    broker.apply_retention()
    assert broker.stats.retention.passes == before + 1
    assert broker.stats.retention.segments_deleted == 0
