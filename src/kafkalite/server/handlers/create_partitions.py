"""CreatePartitions (API key 37), versions 0-3.

v1 is v0 again · v2 is the first flexible version · v3 is v2 again.

Grows a topic to `count` partitions; Kafka never shrinks one, so a count not above the current one is
INVALID_PARTITIONS. Explicit assignments must name only this broker. validate_only checks and changes nothing.
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import InvalidConfigError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code, error_message

INVALID_PARTITIONS = 37
INVALID_REPLICA_ASSIGNMENT = 39


async def _grow(ctx: RequestContext, t: Any, validate_only: bool) -> tuple[int, str | None]:
    if t.assignments and any(list(a.broker_ids) != [ctx.server.node_id] for a in t.assignments):
        return INVALID_REPLICA_ASSIGNMENT, "one broker: assign every new partition to it"
    try:
        await ctx.broker.create_partitions(t.name, t.count, validate_only=validate_only)
    except InvalidConfigError as e:
        return INVALID_PARTITIONS, error_message(e)
    except Exception as e:
        return error_code(e), error_message(e)
    return 0, None


@handles(ApiKey.CREATE_PARTITIONS, versions=range(0, 4))
async def create_partitions(ctx: RequestContext, req: Any) -> Any:
    results = []
    for t in req.topics:
        code, message = await _grow(ctx, t, req.validate_only)
        results.append(ctx.build("CreatePartitionsTopicResult", name=t.name, error_code=code, error_message=message))
    return ctx.build("CreatePartitionsResponse", throttle_time=0, results=results)
