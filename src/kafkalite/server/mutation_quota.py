"""The controller mutation quota (KIP-599) on CreateTopics, CreatePartitions and DeleteTopics.

Each partition a request creates or deletes is one mutation, taken from the token bucket of the entity the client's
(user, client-id) resolves to (`QuotaStore.mutation_bucket`): a CreateTopics entry counts its partitions
(`num_partitions`, the broker default for -1, or its assignments), a CreatePartitions entry the partitions it adds,
a DeleteTopics entry the partitions of the topic it deletes (an unknown topic: none). Validate-only requests take
nothing, as in Kafka.

From the version that knows THROTTLING_QUOTA_EXCEEDED (CreateTopics v6, DeleteTopics v5, CreatePartitions v3), the
entries are taken in request order: an entry is let through while the bucket is not below zero (even if it takes it
below), and answered THROTTLING_QUOTA_EXCEEDED once it is; the handler serves the entries let through
(`authorization.narrowed`/`completed` echo the refused ones into the answer). Older versions cannot be refused this
way: every entry is served and counted. Either way the answer carries throttle_time_ms, the time the bucket needs to
climb back to zero, and the connection reads nothing more for that long (KIP-219).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from kafkalite.errors import UnknownTopicError
from kafkalite.protocol.wire import ApiKey
from kafkalite.security.authorizer import Verdict
from kafkalite.security.operations import RULES, Items, item_name
from kafkalite.server.authorization import completed, narrowed

if TYPE_CHECKING:
    from kafkalite.security.service import Security
    from kafkalite.security.session import Session
    from kafkalite.server.dispatch import RequestContext

THROTTLING_QUOTA_EXCEEDED: Final = 89
STRICT_SINCE: Final[dict[int, int]] = {ApiKey.CREATE_TOPICS: 6, ApiKey.DELETE_TOPICS: 5, ApiKey.CREATE_PARTITIONS: 3}
"""The APIs that mutate partitions, and the first version answering THROTTLING_QUOTA_EXCEEDED."""


def _partitions(ctx: RequestContext, name: str | None) -> int:
    if name is None:
        return 0
    try:
        return len(ctx.broker.topic(name).partitions)
    except (UnknownTopicError, ValueError):
        return 0


def mutations(ctx: RequestContext, entry: Any, topic_names: Callable[[Any], str | None]) -> int:
    """The partitions one request entry creates or deletes."""
    api_key = ctx.schema.api_key
    if api_key == ApiKey.CREATE_TOPICS:
        if entry.assignments:
            return len(entry.assignments)
        requested: int = entry.num_partitions
        return ctx.broker.config.default_partitions if requested == -1 else max(0, requested)
    if api_key == ApiKey.CREATE_PARTITIONS:
        wanted: int = entry.count
        return max(0, wanted - _partitions(ctx, entry.name))
    return _partitions(ctx, item_name(entry, topic_names))


def _items(api_key: int, request: Any) -> Items | None:
    for rule in RULES.get(api_key, ()):
        if rule.items is not None and getattr(request, rule.items.field, None) is not None:
            return rule.items
    return None


async def with_mutation_quota(
    ctx: RequestContext,
    request: Any,
    session: Session,
    security: Security,
    serve: Callable[[Any], Awaitable[Any]],
    topic_names: Callable[[Any], str | None],
) -> Any:
    """Serve `request` through `serve` under the client's controller mutation quota (module docstring)."""
    now = asyncio.get_running_loop().time()
    bucket = security.quotas.mutation_bucket(session.principal.name, ctx.header.client_id or "", now)
    items = _items(ctx.schema.api_key, request)
    if bucket is None or items is None or getattr(request, "validate_only", False):
        return await serve(request)
    strict = ctx.version >= STRICT_SINCE[ctx.schema.api_key]
    refused: dict[str, int] = {}
    for entry in items.of(request):
        count = mutations(ctx, entry, topic_names)
        if not count:
            continue
        name = item_name(entry, topic_names)
        if strict and bucket.throttle_ms() and name is not None:
            refused[name] = THROTTLING_QUOTA_EXCEEDED
        else:
            bucket.take(count)
    throttle_ms = bucket.throttle_ms()
    if not refused:
        answer = await serve(request)
    else:
        verdict = Verdict(items={items: refused})
        response = await serve(narrowed(request, verdict, topic_names))
        principal, host = session.principal, session.host
        answer = completed(ctx.schema, response, request, verdict, security, principal, host, topic_names)
    session.mute(throttle_ms, asyncio.get_running_loop().time())  # from the answer on, as Kafka mutes after it
    return throttled(answer, throttle_ms)


def throttled(response: Any, throttle_ms: int) -> Any:
    """`response` with throttle_time_ms at least `throttle_ms` (a kio response with a throttle_time field)."""
    current = getattr(response, "throttle_time", None)
    if not throttle_ms or not isinstance(current, datetime.timedelta):
        return response
    wanted = datetime.timedelta(milliseconds=throttle_ms)
    return dataclasses.replace(response, throttle_time=max(current, wanted))
