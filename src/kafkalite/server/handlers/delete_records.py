"""DeleteRecords (API key 21), versions 0-2.

v1 is v0 again · v2 is the first flexible version.

Moves each partition's log start offset up to `offset` (-1: the high watermark); records below it are no longer
readable. The answer's low_watermark is the new log start offset. An offset past the high watermark is
OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code


async def _delete(ctx: RequestContext, topic: str, p: Any) -> Any:
    try:
        low_watermark, code = await ctx.broker.delete_records(topic, p.partition_index, p.offset), 0
    except Exception as e:
        low_watermark, code = -1, error_code(e)
    return ctx.build(
        "DeleteRecordsPartitionResult", partition_index=p.partition_index, low_watermark=low_watermark, error_code=code
    )


@handles(ApiKey.DELETE_RECORDS, versions=range(0, 3))
async def delete_records(ctx: RequestContext, req: Any) -> Any:
    topics = [
        ctx.build(
            "DeleteRecordsTopicResult", name=t.name, partitions=[await _delete(ctx, t.name, p) for p in t.partitions]
        )
        for t in req.topics
    ]
    return ctx.build("DeleteRecordsResponse", throttle_time=0, topics=topics)
