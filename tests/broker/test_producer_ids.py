"""Producer ids are the broker's to hand out: a batch naming another is refused, and nothing a log or a damaged
`producer-ids` file holds can push the allocator past the int64 range."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import kafkalite
from kafkalite.broker.producer_ids import BLOCK, MAX_PRODUCER_ID, ProducerIds
from kafkalite.errors import UnknownProducerIdError
from kafkalite.protocol.records import RecordToWrite, build_batch


def _batch(producer_id: int, sequence: int = 0) -> bytes:
    return build_batch(
        [RecordToWrite(b"k", b"v", (), None)],
        now_ms=int(time.time() * 1000),
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
    )


async def _saved(limit: int) -> None:
    return None


@pytest.mark.parametrize("producer_id", [0, 5, MAX_PRODUCER_ID, -2, -(2**63)])
async def test_a_producer_id_never_handed_out_is_refused(broker: kafkalite.Broker, producer_id: int) -> None:
    await broker.create_topic("ids", partitions=1)
    with pytest.raises(UnknownProducerIdError, match="never handed out"):
        await broker.append("ids", 0, _batch(producer_id))
    assert broker.partition("ids", 0).high_watermark == 0


async def test_handed_out_ids_are_accepted_and_no_producer_id_is_not_checked(broker: kafkalite.Broker) -> None:
    await broker.create_topic("ids", partitions=1)
    producer_id, epoch = await broker.init_producer_id()
    assert epoch == 0
    await broker.append("ids", 0, _batch(producer_id))
    await broker.append("ids", 0, _batch(-1, sequence=-1))
    assert broker.partition("ids", 0).high_watermark == 2


async def test_a_presented_id_that_was_never_handed_out_gets_a_new_one(broker: kafkalite.Broker) -> None:
    producer_id, epoch = await broker.init_producer_id(producer_id=MAX_PRODUCER_ID, producer_epoch=3)
    assert (producer_id, epoch) != (MAX_PRODUCER_ID, 4)
    assert 0 <= producer_id < BLOCK


async def test_ids_seen_near_the_end_of_the_range_are_ignored_not_overflowed() -> None:
    ids = ProducerIds(None, _saved)
    producer_id, _ = await ids.init_producer_id(-1, -1, highest_seen=lambda: MAX_PRODUCER_ID)
    assert producer_id == 0
    assert ids.limit == BLOCK


async def test_a_saved_limit_out_of_range_is_ignored() -> None:
    ids = ProducerIds(MAX_PRODUCER_ID + 1000, _saved)  # what the allocator once saved after a hostile batch
    producer_id, _ = await ids.init_producer_id(-1, -1, highest_seen=lambda: 41)
    assert producer_id == 42


async def test_a_bricked_data_dir_serves_idempotent_producers_again(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with kafkalite.Broker(data_dir=data_dir) as broker:
        await broker.create_topic("ids", partitions=1)
        first, _ = await broker.init_producer_id()
        await broker.append("ids", 0, _batch(first))
    (data_dir / "_kafkalite" / "producer-ids").write_text(str(MAX_PRODUCER_ID + 1001))
    async with kafkalite.Broker(data_dir=data_dir) as broker:
        second, _ = await broker.init_producer_id()
        assert first < second < 2**62  # after the id in the log, and an int64
        await broker.append("ids", 0, _batch(second))
        assert broker.partition("ids", 0).high_watermark == 2
