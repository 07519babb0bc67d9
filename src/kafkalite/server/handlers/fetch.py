"""Fetch (API key 1), versions 4-18.

v4 adds isolation_level and last_stable_offset (RecordBatch v2 era) · v5 adds log_start_offset · v7 adds fetch
sessions (KIP-227) · v9 adds current_leader_epoch · v11 adds rack_id and preferred_read_replica · v12 is the first
flexible version · v13 names topics by id instead of by name · v15 moves replica_id into a tagged replica_state ·
v16 adds node endpoints (tagged) · v17 adds replica_directory_id · v18 adds high_watermark in partitions (KRaft only).

Long poll: partitions are read once; if the response holds fewer than min_bytes and max_wait has not passed, wait
for the first append to any requested partition and read again. max_bytes bounds the response and
partition_max_bytes each partition, but the first batch found is always returned whole, so progress is possible
(KIP-74). An empty partition answers zero-length records, never null.

Zero copy: partitions are read with `Broker.fetch_for_send`; a large read of the file engine is a range of the
segment file (`storage.FileRecords`), put in the answer as a `zero_copy.Placeholder` and sent by the connection with
`sendfile` after the framing kio encodes (`server.zero_copy`). A read the answer does not use (over `max_bytes`, or
a long poll reading again) releases its range at once.

No fetch sessions are created: the answer's session_id is 0, which tells the client to send full requests.
isolation_level 1 (READ_COMMITTED) returns only whole batches below the partition's last stable offset and lists
the aborted transactions among them (producer id, first offset) for the client to drop; isolation_level 0 returns
everything up to the high watermark and a null aborted list. Control batches (markers) are returned either way: they
hold offsets, and clients skip them.
"""

from __future__ import annotations

import time
from typing import Any

from kafkalite.broker import Partition
from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_ID, error_code, topic_name_by_id
from kafkalite.server.zero_copy import Placeholder, close_placeholders
from kafkalite.storage import FileRecords

READ_COMMITTED = 1


def _topic_name(ctx: RequestContext, topic: Any) -> str | None:
    """The requested topic's name (v13+ requests name it by id); None when the id is unknown."""
    return topic_name_by_id(ctx.broker, topic.topic_id) if hasattr(topic, "topic_id") else str(topic.topic)


def _partition_data(
    ctx: RequestContext, index: int, code: int, records: bytes = b"", *offsets: int, aborted: list[Any] | None = None
) -> Any:
    high_watermark, last_stable_offset, log_start_offset = offsets or (-1, -1, -1)
    return ctx.build(
        "PartitionData",
        partition_index=index,
        error_code=code,
        high_watermark=high_watermark,
        last_stable_offset=last_stable_offset,
        log_start_offset=log_start_offset,
        aborted_transactions=aborted,
        preferred_read_replica=-1,
        records=records,
    )


def _read_all(ctx: RequestContext, req: Any) -> tuple[list[Any], int, bool]:
    """One pass over every requested partition: (topic responses, record bytes read, whether any partition failed)."""
    budget = req.max_bytes
    read_committed = req.isolation_level == READ_COMMITTED
    total = 0
    failed = False
    responses = []
    for topic in req.topics:
        name = _topic_name(ctx, topic)
        partitions = []
        for p in topic.partitions:
            if name is None:
                partitions.append(_partition_data(ctx, p.partition, UNKNOWN_TOPIC_ID))
                failed = True
                continue
            limit = min(p.partition_max_bytes, budget)  # a read returns its first batch whole, even past limit
            try:
                data = ctx.broker.fetch_for_send(
                    name, p.partition, p.fetch_offset, max(limit, 0), read_committed=read_committed
                )
            except KafkaLiteError as e:
                partitions.append(_partition_data(ctx, p.partition, error_code(e)))
                failed = True
                continue
            read = data.records
            if total == 0 or len(read) <= budget:
                records = Placeholder.of(read) if isinstance(read, FileRecords) else read
            else:
                records = b""
                if isinstance(read, FileRecords):
                    read.close()
            budget -= len(records)
            total += len(records)
            offsets = (data.high_watermark, data.last_stable_offset, data.log_start_offset)
            aborted = None
            if data.aborted_transactions is not None:
                aborted = [
                    ctx.build("AbortedTransaction", producer_id=entry.producer_id, first_offset=entry.first_offset)
                    for entry in data.aborted_transactions
                ]
            partitions.append(_partition_data(ctx, p.partition, 0, records, *offsets, aborted=aborted))
        responses.append(
            ctx.build(
                "FetchableTopicResponse",
                topic=getattr(topic, "topic", None),
                topic_id=getattr(topic, "topic_id", None),
                partitions=partitions,
            )
        )
    return responses, total, failed


def _watched_partitions(ctx: RequestContext, req: Any) -> list[Partition]:
    watched = []
    for topic in req.topics:
        name = _topic_name(ctx, topic)
        for p in topic.partitions:
            if name is not None and name in ctx.broker.topics:
                watched.append(ctx.broker.partition(name, p.partition))
    return watched


@handles(ApiKey.FETCH, versions=range(4, 19))
async def fetch(ctx: RequestContext, req: Any) -> Any:
    deadline = time.monotonic() + req.max_wait.total_seconds()
    while True:
        responses, size, failed = _read_all(ctx, req)
        answer = ctx.build("FetchResponse", throttle_time=0, error_code=0, session_id=0, responses=responses)
        remaining = deadline - time.monotonic()
        if failed or size >= req.min_bytes or remaining <= 0:
            return answer
        close_placeholders(answer)  # read again or answered empty-handed below: these ranges are not sent
        # Read again only after an append: no partitions to watch, the deadline or a shutdown end the long poll
        # with the read just made (as Kafka answers a Fetch of no partitions at once), so no request can spin.
        if not await ctx.broker.wait_for_appends(_watched_partitions(ctx, req), remaining):
            break
    return ctx.build("FetchResponse", throttle_time=0, error_code=0, session_id=0, responses=_read_all(ctx, req)[0])
