"""OffsetFetch (API key 9), versions 1-10.

v0 is not served (it read offsets from ZooKeeper; kio has no v0 and no client we target sends it) · v2 adds a
top-level error_code, and a null topic list means "every partition the group committed" · v3 adds throttle_time_ms ·
v4 is v3 again · v5 adds committed_leader_epoch · v6 is the first flexible version · v7 adds require_stable: a
partition whose offset an open transaction is about to change (TxnOffsetCommit not yet committed or aborted)
answers UNSTABLE_OFFSET_COMMIT (88), and the client retries (KIP-447) · v8 batches groups · v9 adds member_id and
member_epoch: for a KIP-848 consumer group a named member must be current (UNKNOWN_MEMBER_ID) at its epoch
(STALE_MEMBER_EPOCH), the group's error; classic groups ignore both · v10 names topics by id.

A partition without a committed offset answers offset -1, leader epoch -1, metadata "" and no error, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkalite.broker.offsets import CommittedOffset
from kafkalite.errors import UnknownTopicError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_ID, ZERO_UUID

UNSTABLE_OFFSET_COMMIT = 88

# (topic name or None when unknown, topic id, [(partition, committed or None)])
_TopicOffsets = tuple[str | None, Any, list[tuple[int, CommittedOffset | None]]]


def _topic_id(ctx: RequestContext, name: str) -> Any:
    topic = ctx.broker.topics.get(name)
    return ZERO_UUID if topic is None else topic.topic_id


def _requested(ctx: RequestContext, group_id: str, topics: Iterable[Any] | None) -> list[_TopicOffsets]:
    offsets = ctx.broker.offsets
    if topics is None:
        by_topic: dict[str, list[tuple[int, CommittedOffset | None]]] = {}
        for (committed_topic, partition), committed in sorted(offsets.committed(group_id).items()):
            by_topic.setdefault(committed_topic, []).append((partition, committed))
        return [(t, _topic_id(ctx, t), parts) for t, parts in by_topic.items()]
    result: list[_TopicOffsets] = []
    for topic in topics:
        name: str | None = getattr(topic, "name", None)
        topic_id: Any = getattr(topic, "topic_id", None)
        if name is None:
            try:
                name = ctx.broker.topic_by_id(topic_id).name
            except UnknownTopicError:
                name = None
        parts = [(p, None if name is None else offsets.fetch(group_id, name, p)) for p in topic.partition_indexes]
        result.append((name, topic_id, parts))
    return result


def _topic(ctx: RequestContext, suffix: str, group_id: str, entry: _TopicOffsets, require_stable: bool) -> Any:
    name, topic_id, parts = entry
    partitions = []
    for partition, committed in parts:
        code = UNKNOWN_TOPIC_ID if name is None else 0
        if not code and require_stable and ctx.broker.offsets.has_pending(group_id, str(name), partition):
            code, committed = UNSTABLE_OFFSET_COMMIT, None
        partitions.append(
            ctx.build(
                f"OffsetFetchResponsePartition{suffix}",
                partition_index=partition,
                committed_offset=-1 if committed is None else committed.offset,
                committed_leader_epoch=-1 if committed is None else committed.leader_epoch,
                metadata="" if committed is None else committed.metadata,
                error_code=code,
            )
        )
    return ctx.build(f"OffsetFetchResponseTopic{suffix}", name=name or "", topic_id=topic_id, partitions=partitions)


@handles(ApiKey.OFFSET_FETCH, versions=range(1, 11))
async def offset_fetch(ctx: RequestContext, req: Any) -> Any:
    stable = bool(getattr(req, "require_stable", False))
    if ctx.version < 8:
        topics = [_topic(ctx, "", req.group_id, entry, stable) for entry in _requested(ctx, req.group_id, req.topics)]
        return ctx.build("OffsetFetchResponse", throttle_time=0, topics=topics, error_code=0)
    groups = [_group(ctx, group, stable) for group in req.groups]
    return ctx.build("OffsetFetchResponse", throttle_time=0, groups=groups)


def _group(ctx: RequestContext, group: Any, stable: bool) -> Any:
    member_epoch: int = getattr(group, "member_epoch", -1)
    code = ctx.broker.groups.validate_offset_fetch(group.group_id, getattr(group, "member_id", None), member_epoch)
    topics = (
        []
        if code
        else [_topic(ctx, "s", group.group_id, e, stable) for e in _requested(ctx, group.group_id, group.topics)]
    )
    return ctx.build("OffsetFetchResponseGroup", group_id=group.group_id, topics=topics, error_code=code)
