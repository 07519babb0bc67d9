"""Fetch's byte limits over the wire: max_bytes bounds the whole answer, the first partition's included (KIP-74)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch

pytestmark = pytest.mark.timeout(60)


def batch(value: bytes) -> bytes:
    return build_batch([RecordToWrite(value)], now_ms=int(time.time() * 1000))


async def fetch(raw: Any, max_bytes: int, partition_max_bytes: int) -> bytes:
    partition = raw.nested(
        1, 12, "FetchPartition", partition=0, fetch_offset=0, partition_max_bytes=partition_max_bytes,
        current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1,
    )  # fmt: skip
    topic = raw.nested(1, 12, "FetchTopic", topic="lim", partitions=[partition])
    response = await raw.request(
        1, 12, cluster_id=None, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=max_bytes, isolation_level=0,
        session_id=0, session_epoch=-1, topics=[topic], forgotten_topics_data=[], rack_id="",
    )  # fmt: skip
    records: bytes = response.responses[0].partitions[0].records
    return records


async def test_max_bytes_bounds_the_first_partition_too(raw: Any, broker: Broker) -> None:
    await broker.create_topic("lim", 1)
    batches = [batch(bytes([i]) * 100) for i in range(3)]
    for b in batches:
        await broker.produce("lim", 0, b, acks=1)
    assert len(await fetch(raw, max_bytes=1 << 20, partition_max_bytes=1 << 20)) == sum(map(len, batches))
    assert len(await fetch(raw, max_bytes=len(batches[0]) + 10, partition_max_bytes=1 << 20)) == len(batches[0])
    assert len(await fetch(raw, max_bytes=1, partition_max_bytes=1 << 20)) == len(batches[0])  # the first batch whole
