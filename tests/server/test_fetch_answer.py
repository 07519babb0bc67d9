"""The Fetch handler's answer (`server.zero_copy.FetchAnswer`): its frame is kio's frame for every version, a range
of a segment file included; a long poll that outlives its topic never answers with the records of another one."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalite.broker import Broker
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.zero_copy import FetchAnswer, SplicedFrame, failed_partition
from kafkalite.storage import FileRecords
from wire_requests import consumer_fetch

pytestmark = pytest.mark.timeout(60)

UNKNOWN_TOPIC_ID = 100
NOT_LEADER = 6


def _kio_frame(version: int, topic: Any, stored: bytes, correlation_id: int) -> bytes:
    schema = api_schema(ApiKey.FETCH, version)
    build = schema.build

    def partition(index: int, code: int, hw: int, records: bytes | None, aborted: list[Any] | None) -> Any:
        return build(
            "PartitionData", partition_index=index, error_code=code, high_watermark=hw, last_stable_offset=hw,
            log_start_offset=0 if hw >= 0 else -1, aborted_transactions=aborted, preferred_read_replica=-1,
            records=records,
        )  # fmt: skip

    response = build(
        "FetchResponse",
        throttle_time=7,
        error_code=0,
        session_id=0,
        responses=[
            build(
                "FetchableTopicResponse",
                topic=None if version >= 13 else topic,
                topic_id=topic if version >= 13 else None,
                partitions=[
                    partition(0, 0, 9, stored, [build("AbortedTransaction", producer_id=4, first_offset=2)]),
                    partition(1, NOT_LEADER, -1, None, None),
                    partition(2, 0, 9, b"small", None),
                ],
            )
        ],
    )
    return schema.encode_response(correlation_id, response)


@pytest.mark.parametrize("version", range(4, 19))
def test_the_frame_is_kios_with_the_range_in_its_place(tmp_path: Path, version: int) -> None:
    stored = bytes(range(256)) * 80
    path = tmp_path / "segment.log"
    path.write_bytes(b"before" + stored + b"after")
    fd = os.open(path, os.O_RDONLY)
    released: list[FileRecords] = []
    records = FileRecords(fd, len(b"before"), len(stored), released.append)
    topic: Any = uuid.uuid4() if version >= 13 else "orders"
    answer = FetchAnswer(
        [
            (
                topic,
                [(0, 0, 9, 9, 0, [(4, 2)], records), failed_partition(1, NOT_LEADER), (2, 0, 9, 9, 0, None, b"small")],
            )
        ],
        throttle_ms=7,
    )
    frame = answer.frame(41, api_schema(ApiKey.FETCH, version))
    assert isinstance(frame, SplicedFrame)
    assert [type(part) for part in frame.parts] == [bytes, FileRecords, bytes]
    sent = b"".join(part if isinstance(part, bytes) else os.pread(fd, len(part), part.position) for part in frame.parts)
    assert sent == _kio_frame(version, topic, stored, 41)
    assert len(frame) == len(sent)
    frame.close()
    assert released == [records]


@pytest.mark.parametrize("version", [4, 11, 12, 13, 18])
def test_an_answer_without_ranges_is_one_bytes_frame(version: int) -> None:
    topic: Any = uuid.uuid4() if version >= 13 else "orders"
    answer = FetchAnswer(
        [
            (
                topic,
                [
                    (0, 0, 9, 9, 0, [(4, 2)], b"stored"),
                    failed_partition(1, NOT_LEADER),
                    (2, 0, 9, 9, 0, None, b"small"),
                ],
            )
        ],
    ).throttled(7)
    assert answer.frame(41, api_schema(ApiKey.FETCH, version)) == _kio_frame(version, topic, b"stored", 41)


async def test_a_long_poll_by_id_across_a_replaced_topic_answers_unknown_topic_id(raw: Any, broker: Broker) -> None:
    old = await broker.create_topic("replaced", 1)
    partition = raw.nested(
        1, 13, "FetchPartition", partition=0, fetch_offset=0, partition_max_bytes=1 << 20,
        current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1,
    )  # fmt: skip
    topic = raw.nested(1, 13, "FetchTopic", topic_id=old.topic_id, partitions=[partition])
    waiting = asyncio.ensure_future(raw.request(1, 13, **consumer_fetch([topic], max_wait=1500)))
    await asyncio.sleep(0.3)  # the Fetch is waiting on the old topic's partition
    await broker.delete_topic("replaced")
    await broker.create_topic("replaced", 1)
    await broker.produce("replaced", 0, build_batch([RecordToWrite(b"new")], now_ms=int(time.time() * 1000)))
    answer = (await waiting).responses[0]
    assert answer.topic_id == old.topic_id
    assert (answer.partitions[0].error_code, answer.partitions[0].high_watermark) == (UNKNOWN_TOPIC_ID, -1)
    assert not answer.partitions[0].records
