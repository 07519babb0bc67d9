"""ListOffsets (API key 2), versions 1-11.

v1 answers one offset per partition (v0's offset arrays are not served) · v2 adds isolation_level and
throttle_time_ms · v4 adds current_leader_epoch and leader_epoch · v6 is the first flexible version · v7 allows
timestamp -3 (MAX_TIMESTAMP, KIP-734) · v8 allows -4 (earliest local, KIP-405) · v9 allows -5 (latest tiered) ·
v10 adds timeout_ms · v11 allows -6 (earliest pending upload).

Timestamps: -1 latest (the log end offset, the next offset to be written), -2 earliest (the log start offset), -3
the record with the largest timestamp, >= 0 the first offset whose timestamp is >= the target, or offset -1 when
there is none. Without tiered storage every record is local: -4 and -6 are the earliest, -5 the latest.
With isolation_level 1 (READ_COMMITTED, v2+) "latest" is the last stable offset instead of the log end.
"""

from __future__ import annotations

from typing import Any

from kafkalite.broker import EARLIEST, LATEST
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code

_TIERED_ALIASES = {-4: EARLIEST, -5: LATEST, -6: EARLIEST}


def _partition(ctx: RequestContext, topic: str, p: Any, read_committed: bool) -> Any:
    timestamp = _TIERED_ALIASES.get(p.timestamp, p.timestamp)
    try:
        offset, found_timestamp = ctx.broker.list_offset(
            topic, p.partition_index, timestamp, read_committed=read_committed
        )
    except Exception as e:
        offset, found_timestamp, code = -1, -1, error_code(e)
    else:
        code = 0
    return ctx.build(
        "ListOffsetsPartitionResponse",
        partition_index=p.partition_index,
        error_code=code,
        timestamp=found_timestamp,
        offset=offset,
        leader_epoch=-1,
    )


@handles(ApiKey.LIST_OFFSETS, versions=range(1, 12))
async def list_offsets(ctx: RequestContext, req: Any) -> Any:
    read_committed = getattr(req, "isolation_level", 0) == 1
    topics = [
        ctx.build(
            "ListOffsetsTopicResponse",
            name=t.name,
            partitions=[_partition(ctx, t.name, p, read_committed) for p in t.partitions],
        )
        for t in req.topics
    ]
    return ctx.build("ListOffsetsResponse", throttle_time=0, topics=topics)
