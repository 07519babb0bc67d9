"""DeleteTopics (API key 20), versions 1-6.

v1 adds throttle_time_ms (and is the oldest served) · v2 and v3 are v1 again · v4 is the first flexible version ·
v5 adds error_message · v6 names topics by name or by id, and answers with both.

Internal topics cannot be deleted (UNKNOWN_TOPIC_OR_PARTITION, from the broker); an unknown id gets UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import UnknownTopicError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_ID, ZERO_UUID, error_code, error_message


async def _delete(ctx: RequestContext, name: str | None, topic_id: Any) -> Any:
    code, message = 0, None
    try:
        if name is None:
            try:
                name = ctx.broker.topic_by_id(topic_id).name
            except UnknownTopicError as e:
                code, message = UNKNOWN_TOPIC_ID, str(e)
        if name is not None:
            topic_id = ctx.broker.topic(name).topic_id
            await ctx.broker.delete_topic(name)
    except Exception as e:
        code, message = error_code(e), error_message(e)
    return ctx.build(
        "DeletableTopicResult", name=name, topic_id=topic_id or ZERO_UUID, error_code=code, error_message=message
    )


@handles(ApiKey.DELETE_TOPICS, versions=range(1, 7))
async def delete_topics(ctx: RequestContext, req: Any) -> Any:
    if ctx.version >= 6:
        requested = [(t.name, t.topic_id if t.topic_id != ZERO_UUID else None) for t in req.topics]
    else:
        requested = [(name, None) for name in req.topic_names]
    results = [await _delete(ctx, name, topic_id) for name, topic_id in requested]
    return ctx.build("DeleteTopicsResponse", throttle_time=0, responses=results)
