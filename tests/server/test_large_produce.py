"""Produce requests large enough that their records stay in the request's frame (`protocol.produce_request`): served
over a socket to both storage engines, every version, the stored batches are the ones sent, and the refusals that
read the records (compacted topics without keys, LogAppendTime stamping) behave as for a small request."""

from __future__ import annotations

import os
import struct
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.serial import entity_reader

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.produce_request import RECORDS_VIEW_MIN_BYTES
from kafkalite.protocol.records import RecordToWrite, build_batch, read_batches, read_header
from kafkalite.protocol.wire import ApiKey
from kafkalite.server import KafkaServer, serve
from kafkalite.server.dispatch import supported_ranges
from kafkalite.storage.file_ops import FileOps

pytestmark = pytest.mark.timeout(60)

PRODUCE_VERSIONS = next(range(lo, hi + 1) for key, lo, hi in supported_ranges() if key == ApiKey.PRODUCE)
BIG_VALUE = bytes(range(256)) * (RECORDS_VIEW_MIN_BYTES // 256 // 4)  # four of these pass the threshold


@pytest.fixture(params=["file", "memory"])
async def broker(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(data_dir=tmp_path if request.param == "file" else None) as b:
        yield b


@pytest.fixture
async def server(broker: Broker) -> AsyncIterator[KafkaServer]:
    async with serve(broker, "127.0.0.1", 0, max_frame_bytes=4 * RECORDS_VIEW_MIN_BYTES) as s:
        yield s


@pytest.fixture
async def raw(server: KafkaServer) -> AsyncIterator[RawClient]:
    client = await RawClient.connect(server)
    try:
        yield client
    finally:
        await client.close()


def _batch(values: list[bytes], keys: list[bytes | None] | None = None) -> bytes:
    keys = keys or [b"k"] * len(values)
    records = [RecordToWrite(value, key=key) for value, key in zip(values, keys, strict=True)]
    return build_batch(records, now_ms=int(time.time() * 1000))


async def _produce(raw: RawClient, version: int, topic: Any, partitions: dict[int, bytes]) -> list[Any]:
    data = [raw.nested(0, version, "PartitionProduceData", index=i, records=r) for i, r in partitions.items()]
    entry = raw.nested(0, version, "TopicProduceData", name=topic.name, topic_id=topic.topic_id, partition_data=data)
    response = await raw.request(0, version, transactional_id=None, acks=-1, timeout=1000, topic_data=[entry])
    return list(response.responses[0].partition_responses)


def _stored(broker: Broker, topic: str, partition: int) -> bytes:
    return bytes(broker.fetch(topic, partition, 0, 64 * RECORDS_VIEW_MIN_BYTES).records)


def _without_base_offset(batch: bytes) -> bytes:
    return batch[8:]


@pytest.fixture
def appended(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> list[type]:
    """What the records of each batch the file engine wrote were taken from, in order: `bytearray`, the buffer a
    large frame was read into (the records went from the request to the disk write without a copy), or `bytes`, a
    copy of them (kio's reader makes one for a small request). The memory engine copies every batch into its own
    storage, so it leaves this list empty."""
    sources: list[type] = []
    pwrite, pwritev = FileOps.pwrite, FileOps.pwritev

    def source(buffer: Any) -> type:
        return type(buffer.obj if isinstance(buffer, memoryview) else buffer)

    def noting_pwrite(ops: FileOps, fd: int, data: Any, position: int) -> None:
        if _is_log(fd):
            sources.append(source(data))
        pwrite(ops, fd, data, position)

    def noting_pwritev(ops: FileOps, fd: int, parts: Any, position: int) -> None:
        if _is_log(fd):
            sources.append(source(parts[-1]))  # the batch's new base offset, then a view of the rest of it
        pwritev(ops, fd, parts, position)

    monkeypatch.setattr(FileOps, "pwrite", noting_pwrite)
    monkeypatch.setattr(FileOps, "pwritev", noting_pwritev)
    return sources


def _is_log(fd: int) -> bool:
    return os.readlink(f"/proc/self/fd/{fd}").endswith(".log")


def _expected(broker: Broker, sources: list[type]) -> list[type]:
    """`sources` for the file engine; nothing for the memory engine, which writes no file."""
    return sources if broker.config.data_dir is not None else []


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
async def test_a_large_request_stores_the_batches_it_carried(
    raw: RawClient, broker: Broker, appended: list[type], version: int
) -> None:
    topic = await broker.create_topic(f"large-{version}", 2)
    first = _batch([BIG_VALUE] * 3)
    second = _batch([BIG_VALUE, b"small"])
    small = _batch([b"one", b"two"])
    assert len(first) + len(second) + len(small) >= RECORDS_VIEW_MIN_BYTES
    answers = await _produce(raw, version, topic, {0: first + second, 1: small})
    assert [(a.index, a.error_code, a.base_offset) for a in answers] == [(0, 0, 0), (1, 0, 0)]
    # the records reached the disk write as views of the frame: two batches to partition 0, one to partition 1
    assert appended == _expected(broker, [bytearray] * 3)
    stored = _stored(broker, topic.name, 0)
    positions = read_batches(stored)
    assert [read_header(stored, pos).base_offset for pos, _ in positions] == [0, 3]
    assert [_without_base_offset(stored[pos : pos + h.size]) for pos, h in positions] == [
        _without_base_offset(first),
        _without_base_offset(second),
    ]
    assert _stored(broker, topic.name, 1)[8:] == small[8:]
    again = await _produce(raw, version, topic, {0: _batch([BIG_VALUE] * 4)})
    assert (again[0].error_code, again[0].base_offset) == (0, 5)
    small_request = await _produce(raw, version, topic, {1: _batch([b"three"])})
    assert (small_request[0].error_code, small_request[0].base_offset) == (0, 2)
    assert appended[-1:] == _expected(broker, [bytes])  # a small request is read by kio, records copied


async def test_a_large_request_to_a_compacted_topic_refuses_records_without_keys(
    raw: RawClient, broker: Broker
) -> None:
    topic = await broker.create_topic("large-compacted", 1, {"cleanup.policy": "compact"})
    keyless = _batch([BIG_VALUE] * 4 + [b"v"], [b"a", None, b"b", b"c", None])
    (answer,) = await _produce(raw, 9, topic, {0: keyless})
    assert answer.error_code == 87  # INVALID_RECORD
    assert [e.batch_index for e in answer.record_errors] == [1, 4]
    assert broker.partition(topic.name, 0).high_watermark == 0


async def test_a_large_request_to_a_log_append_time_topic_is_stamped(raw: RawClient, broker: Broker) -> None:
    topic = await broker.create_topic("large-append-time", 1, {"message.timestamp.type": "LogAppendTime"})
    sent = _batch([BIG_VALUE] * 4)
    before = int(time.time() * 1000)
    (answer,) = await _produce(raw, 9, topic, {0: sent})
    assert answer.error_code == 0
    stamped = read_header(_stored(broker, topic.name, 0))
    assert not read_header(sent).log_append_time
    assert stamped.log_append_time
    assert stamped.max_timestamp >= before


async def test_a_large_request_naming_an_unknown_topic_id_is_refused(raw: RawClient, broker: Broker) -> None:
    class Unknown:
        name = "nobody"
        topic_id = uuid.uuid4()

    answers = await _produce(raw, 13, Unknown, {0: _batch([BIG_VALUE] * 4)})
    assert [a.error_code for a in answers] == [100]  # UNKNOWN_TOPIC_ID


async def test_a_large_request_with_an_unknown_tagged_field_closes_only_its_connection(
    raw: RawClient, broker: Broker, server: KafkaServer, appended: list[type]
) -> None:
    """An undecodable large request is a protocol error like any other: its connection closes, nothing is written,
    and the broker goes on serving a new connection."""
    topic = await broker.create_topic("large-tagged", 1)
    data = [raw.nested(0, 9, "PartitionProduceData", index=0, records=_batch([BIG_VALUE] * 4))]
    entry = raw.nested(0, 9, "TopicProduceData", name=topic.name, partition_data=data)
    frame = bytearray(raw.encode(0, 9, transactional_id=None, acks=-1, timeout=1000, topic_data=[entry]))
    assert frame[-3:] == b"\x00\x00\x00"  # the partition's, the topic's and the request's tagged-field counts
    frame[-3:-2] = b"\x01\x05\x01\x00"  # the partition gets one unknown tagged field
    frame[:4] = struct.pack(">i", len(frame) - 4)
    await raw.send_raw(bytes(frame))
    assert await raw.is_closed_by_server()
    assert appended == []
    assert broker.partition(topic.name, 0).high_watermark == 0
    again = await RawClient.connect(server)
    try:
        answers = await _produce(again, 9, topic, {0: _batch([b"after"])})
    finally:
        await again.close()
    assert [(a.error_code, a.base_offset) for a in answers] == [(0, 0)]


async def test_pipelined_large_requests_keep_their_records_until_each_is_stored(
    raw: RawClient, broker: Broker, appended: list[type]
) -> None:
    """Twenty acks=all requests of about 300 KiB each, sent back to back on one connection, so later frames arrive
    while earlier answers wait for their fsync holding their records (views of their frames' buffers): each is
    answered in order and stores exactly what it carried. (That a buffer is not read into while a view of it is
    left is `test_wire`'s to show: here the records are written before the next frame is taken.)"""
    version = PRODUCE_VERSIONS[-1]
    topic = await broker.create_topic("pipelined-large", 1)
    batches = [_batch([bytes([n]) * len(BIG_VALUE)] * 4 + [f"request {n}".encode()]) for n in range(20)]
    frames = []
    for batch in batches:
        data = [raw.nested(0, version, "PartitionProduceData", index=0, records=batch)]
        entry = raw.nested(
            0, version, "TopicProduceData", name=topic.name, topic_id=topic.topic_id, partition_data=data
        )
        frames.append(raw.encode(0, version, transactional_id=None, acks=-1, timeout=5000, topic_data=[entry]))
    first_correlation = raw.correlation_id - len(frames) + 1
    await raw.send_raw(b"".join(frames))
    for n in range(len(frames)):
        frame = await raw.read_frame()
        assert struct.unpack_from(">i", frame)[0] == first_correlation + n  # answered in request order
        response_type = load_response_schema(0, version)
        response, _ = entity_reader(response_type)(frame, 4 + response_type.__header_schema__.__version__)
        answer = response.responses[0].partition_responses[0]
        assert (answer.error_code, answer.base_offset) == (0, 5 * n)
    assert appended == _expected(broker, [bytearray] * len(frames))
    stored = _stored(broker, topic.name, 0)
    positions = read_batches(stored)
    assert [_without_base_offset(stored[pos : pos + h.size]) for pos, h in positions] == [
        _without_base_offset(batch) for batch in batches
    ]
