"""Fetch (API key 1), versions 4-18.

v4 adds isolation_level and last_stable_offset (RecordBatch v2 era) · v5 adds log_start_offset · v7 adds fetch
sessions (KIP-227) · v9 adds current_leader_epoch · v11 adds rack_id and preferred_read_replica · v12 is the first
flexible version · v13 names topics by id instead of by name · v15 moves replica_id into a tagged replica_state ·
v16 adds node endpoints (tagged) · v17 adds replica_directory_id · v18 adds high_watermark in partitions (KRaft only).

Long poll: partitions are read once; if the response holds fewer than min_bytes and max_wait has not passed, wait
for the first append to any requested partition and read again. max_bytes bounds the response and
partition_max_bytes each partition, but the first batch found is always returned whole, so progress is possible
(KIP-74). An empty partition answers zero-length records, never null.

The answer is a `zero_copy.FetchAnswer`: each partition's outcome as plain values, framed when it is sent by
`protocol.fetch_response` rather than built and written by kio (the Fetch answer of a consumer that keeps up cost
more than the Produce request that carried its records). Partitions are read with `Partition.read_for_send`, found
in `Broker.topics` (`Broker.fetch_for_send` answers the partitions the broker does not have, with their error); a large
read of the file engine is a range of the segment file (`storage.FileRecords`), which the connection sends with
`sendfile` (`server.zero_copy`). A read the answer does not use (over `max_bytes`, or a long poll reading again)
releases its range at once. Each read looks the requested topics up again (by id from v13), so a topic deleted or
replaced during a long poll is answered as such, never with another topic's records.

No fetch sessions are created: the answer's session_id is 0, which tells the client to send full requests.
isolation_level 1 (READ_COMMITTED) returns only whole batches below the partition's last stable offset and lists
the aborted transactions among them (producer id, first offset) for the client to drop; isolation_level 0 returns
everything up to the high watermark and a null aborted list. Control batches (markers) are returned either way: they
hold offsets, and clients skip them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from kafkalite.broker import Partition
from kafkalite.broker.partition import partition_of
from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.fetch_response import FIRST_TOPIC_ID_VERSION
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_ID, error_code
from kafkalite.server.zero_copy import FetchAnswer, Fetched, failed_partition
from kafkalite.storage import FileRecords

READ_COMMITTED = 1


def _requested_names(ctx: RequestContext, req: Any) -> list[str | None]:
    """Each requested topic's name (v13+ requests name it by id), in request order; None for an id unknown here."""
    if ctx.schema.version < FIRST_TOPIC_ID_VERSION:
        return [str(topic.topic) for topic in req.topics]
    by_id = ctx.broker.topics_by_id_number  # `_common.topic_name_by_id`'s rule, here without a Python call per topic
    names: list[str | None] = []
    for topic in req.topics:
        topic_id: uuid.UUID | None = topic.topic_id
        known = None if topic_id is None or topic_id.int == 0 else by_id.get(topic_id.int)
        names.append(None if known is None else known.name)
    return names


def _read_all(ctx: RequestContext, req: Any, names: list[str | None]) -> tuple[FetchAnswer, int, bool]:
    """One pass over every requested partition, each topic by the name `names` gives it: (the answer, record bytes
    read, whether any partition failed)."""
    budget = req.max_bytes
    read_committed = req.isolation_level == READ_COMMITTED
    by_id = ctx.schema.version >= FIRST_TOPIC_ID_VERSION
    total = 0
    failed = False
    topics: list[tuple[str | uuid.UUID | None, list[Fetched]]] = []
    for topic, name in zip(req.topics, names, strict=True):
        partitions: list[Fetched] = []
        for p in topic.partitions:
            if name is None:
                partitions.append(failed_partition(p.partition, UNKNOWN_TOPIC_ID))
                failed = True
                continue
            limit = max(min(p.partition_max_bytes, budget), 0)  # a read returns its first batch whole, even past it
            known = partition_of(ctx.broker.topics, name, p.partition)
            try:
                if known is not None:
                    # `Broker.fetch_for_send` without its interpreted frame; it raises the unknown topic or partition
                    data = known.read_for_send(p.fetch_offset, limit, read_committed=read_committed)
                else:
                    data = ctx.broker.fetch_for_send(
                        name, p.partition, p.fetch_offset, limit, read_committed=read_committed
                    )
            except KafkaLiteError as e:  # a read that failed: empty records, as Kafka's read path answers one
                partitions.append((p.partition, error_code(e), -1, -1, -1, None, b""))
                failed = True
                continue
            records = data.records
            if total != 0 and len(records) > budget:
                if isinstance(records, FileRecords):
                    records.close()  # a range of a segment file the answer has no room for
                records = b""
            budget -= len(records)
            total += len(records)
            aborted = None
            if data.aborted_transactions is not None:
                aborted = [(entry.producer_id, entry.first_offset) for entry in data.aborted_transactions]
            partitions.append(
                (
                    p.partition,
                    0,
                    data.high_watermark,
                    data.last_stable_offset,
                    data.log_start_offset,
                    aborted,
                    records,
                )
            )
        topics.append((topic.topic_id if by_id else topic.topic, partitions))
    return FetchAnswer(topics), total, failed


def _watched_partitions(ctx: RequestContext, req: Any, names: list[str | None]) -> list[Partition]:
    watched = []
    for topic, name in zip(req.topics, names, strict=True):
        for p in topic.partitions:
            known = None if name is None else ctx.broker.topics.get(name)
            if known is not None and 0 <= p.partition < len(known.partitions):
                watched.append(known.partitions[p.partition])
    return watched


@handles(ApiKey.FETCH, versions=range(4, 19))
async def fetch(ctx: RequestContext, req: Any) -> FetchAnswer:
    deadline = time.monotonic() + req.max_wait.total_seconds()
    while True:
        names = _requested_names(ctx, req)  # the long poll's watch list below uses the same lookup
        answer, size, failed = _read_all(ctx, req, names)
        remaining = deadline - time.monotonic()
        if failed or size >= req.min_bytes or remaining <= 0:
            return answer
        answer.close()  # read again or answered empty-handed below: these ranges are not sent
        # Read again only after an append: no partitions to watch, the deadline or a shutdown end the long poll
        # with the read just made (as Kafka answers a Fetch of no partitions at once), so no request can spin.
        if not await ctx.broker.wait_for_appends(_watched_partitions(ctx, req, names), remaining):
            break
    return _read_all(ctx, req, _requested_names(ctx, req))[0]
