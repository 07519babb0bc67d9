"""The Produce and Fetch handlers find a partition themselves (not through `Broker.append` and
`Broker.fetch_for_send`): a partition index past the topic's end or below zero, a topic id the broker never gave out,
and a closed broker are answered as those `Broker` methods answer them, through `dispatch` as a client's bytes
arrive."""

from __future__ import annotations

import time
import uuid
from typing import Any, cast

import pytest

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.server.dispatch import ServerInfo, dispatch
from wire_requests import consumer_fetch

pytestmark = pytest.mark.timeout(60)

UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100
SERVER = ServerInfo(0, "127.0.0.1", 9092)
RAW = RawClient(cast(Any, None), cast(Any, None))  # used to encode and decode only


def _batch(*, producer_id: int = -1) -> bytes:
    sequence = {"producer_id": producer_id, "producer_epoch": 0, "base_sequence": 0} if producer_id >= 0 else {}
    return build_batch([RecordToWrite(b"v")], now_ms=int(time.time() * 1000), **sequence)


async def _produce(broker: Broker, version: int, name: str, index: int, records: bytes) -> Any:
    topic_id = broker.topics[name].topic_id if name in broker.topics else uuid.uuid4()
    data = [RAW.nested(0, version, "PartitionProduceData", index=index, records=records)]
    topic = RAW.nested(0, version, "TopicProduceData", name=name, topic_id=topic_id, partition_data=data)
    frame = RAW.encode(0, version, transactional_id=None, acks=1, timeout=1000, topic_data=[topic])
    answer = await dispatch(broker, SERVER, frame[4:], "127.0.0.1")
    assert type(answer) is bytes
    return RAW.decode_response(0, version, answer[4:]).responses[0].partition_responses[0]


async def _fetch(broker: Broker, version: int, topic_id: uuid.UUID, name: str, index: int) -> Any:
    partition = RAW.nested(1, version, "FetchPartition", partition=index, fetch_offset=0, partition_max_bytes=1 << 20)
    topic = RAW.nested(1, version, "FetchTopic", topic=name, topic_id=topic_id, partitions=[partition])
    frame = RAW.encode(1, version, **consumer_fetch([topic]))
    answer = await dispatch(broker, SERVER, frame[4:], "127.0.0.1")
    assert type(answer) is bytes  # the memory engine's records: no range of a file to send
    return RAW.decode_response(1, version, answer[4:]).responses[0].partitions[0]


@pytest.mark.parametrize("version", [9, 13])
async def test_produce_to_a_partition_the_topic_does_not_have(version: int) -> None:
    async with Broker() as broker:
        await broker.create_topic("two", 2)
        for index in (2, -1, 1000):
            answer = await _produce(broker, version, "two", index, _batch())
            assert (answer.index, answer.error_code) == (index, UNKNOWN_TOPIC_OR_PARTITION)
        assert [p.high_watermark for p in broker.topics["two"].partitions] == [0, 0]
        answer = await _produce(broker, version, "two", 1, _batch())
        assert (answer.error_code, answer.base_offset) == (0, 0)


async def test_produce_by_an_id_no_topic_has() -> None:
    async with Broker() as broker:
        answer = await _produce(broker, 13, "nobody", 0, _batch())
        assert answer.error_code == UNKNOWN_TOPIC_ID


@pytest.mark.parametrize("version", [12, 13])
async def test_fetch_of_a_partition_the_topic_does_not_have(version: int) -> None:
    async with Broker() as broker:
        topic = await broker.create_topic("two", 2)
        await broker.produce("two", 1, _batch())
        for index in (2, -1, 1000):
            answer = await _fetch(broker, version, topic.topic_id, "two", index)
            assert (answer.partition_index, answer.error_code) == (index, UNKNOWN_TOPIC_OR_PARTITION)
        answer = await _fetch(broker, version, topic.topic_id, "two", 1)
        assert (answer.error_code, answer.high_watermark) == (0, 1)
        assert answer.records


async def test_a_closed_broker_appends_nothing_not_even_a_duplicate() -> None:
    """`Broker.append` refuses every append once the broker closes; a batch the partition would take as an
    idempotent producer's duplicate (acknowledged without writing) is refused too."""
    broker = Broker()
    await broker.start()
    await broker.create_topic("t", 1)
    producer_id, _ = await broker.init_producer_id()
    first = _batch(producer_id=producer_id)
    assert (await _produce(broker, 9, "t", 0, first)).error_code == 0
    await broker.close()
    for records in (first, _batch()):  # the duplicate, then a new batch
        answer = await _produce(broker, 9, "t", 0, records)
        assert answer.error_code != 0
