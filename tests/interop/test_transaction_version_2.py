"""Transaction version 2 (KIP-890 part 2) against `kafkalite serve`, over raw wire requests built with kio: none of
the installed clients implements it (librdkafka 2.16, aiokafka 0.14 and kafka-python 3.0 send AddPartitionsToTxn and
EndTxn v4 at most, and read no `transaction.version` feature), so these requests are the ones Kafka's Java client
sends from 4.0 on. A committed transaction, an aborted one and an open one, then kill -9 of the broker: after the
restart read_committed sees exactly the committed records, the open transaction is aborted by its timeout, and the
bumped epoch (persisted in `__transaction_state`) still fences the old one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from kafkalite.protocol.records import RecordToWrite, build_batch, iter_records, read_batches
from security.wire_client import WireClient
from wire_requests import consumer_fetch

from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

TOPIC = "tv2"


def batch(pid: int, epoch: int, sequence: int, value: bytes) -> bytes:
    return build_batch(
        [RecordToWrite(value)],
        now_ms=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=True,
    )


async def produce(client: WireClient, tid: str, records: bytes) -> int:
    data = client.nested(0, 12, "PartitionProduceData", index=0, records=records)
    topic = client.nested(0, 12, "TopicProduceData", name=TOPIC, partition_data=[data])
    response = await client.request(0, 12, transactional_id=tid, acks=-1, timeout=5000, topic_data=[topic])
    return int(response.responses[0].partition_responses[0].error_code)


async def end(client: WireClient, tid: str, pid: int, epoch: int, commit: bool) -> Any:
    return await client.request(26, 5, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)


async def read_committed(client: WireClient) -> tuple[list[bytes], int]:
    """(the values a read_committed consumer gets from offset 0, the last stable offset)."""
    partition = client.nested(
        1,
        12,
        "FetchPartition",
        partition=0,
        fetch_offset=0,
        partition_max_bytes=1 << 20,
        current_leader_epoch=-1,
        last_fetched_epoch=-1,
        log_start_offset=-1,
    )
    topic = client.nested(1, 12, "FetchTopic", topic=TOPIC, partitions=[partition])
    response = await client.request(1, 12, **consumer_fetch([topic], min_bytes=0, isolation_level=1))
    data = response.responses[0].partitions[0]
    pending = sorted((a.first_offset, a.producer_id) for a in data.aborted_transactions or [])
    records = data.records or b""
    values: list[bytes] = []
    aborting: set[int] = set()
    for pos, header in read_batches(records):
        # What a client does: a producer's batches from an aborted transaction's first offset to its marker are
        # skipped, and so are the markers.
        while pending and pending[0][0] <= header.base_offset:
            aborting.add(pending.pop(0)[1])
        if header.is_control:
            aborting.discard(header.producer_id)
        elif not (header.is_transactional and header.producer_id in aborting):
            values += [r.value for r in iter_records(records, pos) if r.value is not None]
    return values, int(data.last_stable_offset)


async def init(client: WireClient, tid: str, timeout_ms: int = 60_000) -> tuple[int, int]:
    response = await client.request(
        22,
        5,
        transactional_id=tid,
        transaction_timeout=timeout_ms,
        producer_id=-1,
        producer_epoch=-1,
    )
    assert response.error_code == 0
    return int(response.producer_id), int(response.producer_epoch)


async def before_kill(port: int) -> dict[str, tuple[int, int]]:
    client = await WireClient.connect(port)
    try:
        features = await client.request(18, 3, client_software_name="t", client_software_version="1")
        assert {f.name: f.max_version_level for f in features.finalized_features}["transaction.version"] == 2
        created = client.nested(
            19, 7, "CreatableTopic", name=TOPIC, num_partitions=1, replication_factor=1, assignments=[], configs=[]
        )
        await client.request(19, 7, topics=[created], timeout=5000, validate_only=False)
        pid, epoch = await init(client, "committer")
        assert await produce(client, "committer", batch(pid, epoch, 0, b"committed")) == 0  # no AddPartitionsToTxn
        ended = await end(client, "committer", pid, epoch, True)
        assert (ended.error_code, ended.producer_epoch) == (0, epoch + 1)
        assert await produce(client, "committer", batch(pid, epoch + 1, 0, b"aborted")) == 0
        ended = await end(client, "committer", pid, epoch + 1, False)
        assert (ended.error_code, ended.producer_epoch) == (0, epoch + 2)
        open_pid, open_epoch = await init(client, "left-open", timeout_ms=1000)
        assert await produce(client, "left-open", batch(open_pid, open_epoch, 0, b"open")) == 0
        assert await read_committed(client) == ([b"committed"], 4)  # the open transaction holds the LSO
        return {"committer": (pid, epoch + 2), "left-open": (open_pid, open_epoch)}
    finally:
        await client.close()


async def after_restart(port: int, held: dict[str, tuple[int, int]]) -> None:
    client = await WireClient.connect(port)
    try:
        pid, epoch = held["committer"]
        # The epoch bumps survived: the old epochs are fenced, the current one starts the next transaction.
        assert await produce(client, "committer", batch(pid, epoch - 1, 1, b"late")) == 47
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            values, lso = await read_committed(client)
            if lso == 6:  # the open transaction's abort marker is written once its timeout has passed
                break
            await asyncio.sleep(0.1)
        assert (values, lso) == ([b"committed"], 6)
        assert await produce(client, "committer", batch(pid, epoch, 0, b"next")) == 0
        assert (await end(client, "committer", pid, epoch, True)).error_code == 0
        assert (await read_committed(client))[0] == [b"committed", b"next"]
    finally:
        await client.close()


def test_transaction_version_2_across_kill_9(tmp_path: Path) -> None:
    broker = ServedBroker(tmp_path / "data", tmp_path / "serve.log", "--transaction-abort-interval-ms", "100")
    try:
        broker.start()
        held = asyncio.run(before_kill(broker.port))
        broker.kill()
        broker.start()
        asyncio.run(after_restart(broker.port, held))
    finally:
        broker.kill()
