"""TxnOffsetCommit (API key 28), versions 0-5.

v1 is v0 again · v2 adds committed_leader_epoch · v3 adds generation_id, member_id and group_instance_id, so the group
fences a zombie member's commits (KIP-447), and may answer PRODUCER_FENCED (older versions get
INVALID_PRODUCER_EPOCH) · v3 is also the first flexible version · v4 may answer TRANSACTION_ABORTABLE (KIP-890),
never needed here · v5 is v4 again on the wire, but is what a transaction version 2 client sends without
AddOffsetsToTxn (KIP-890 part 2): the commit adds `__consumer_offsets` to the transaction itself. A version 1 client
uses v4 at most.

The offsets are written into `__consumer_offsets` as part of the producer's transaction (through v4, AddOffsetsToTxn
must have added it) and become visible to OffsetFetch only when the transaction commits; an abort drops them. A v3+
request naming a member is checked against the group like an OffsetCommit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID). Partitions of unknown topics answer UNKNOWN_TOPIC_OR_PARTITION; the rest are written together.
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code
from kafkalite.server.handlers._transactions import answer_code, refused

FIRST_FENCED_VERSION = 3
FIRST_IMPLICIT_ADD = 5  # KIP-890 part 2: the commit adds `__consumer_offsets` to the transaction itself


def _partition_error(ctx: RequestContext, topic: str, index: int) -> int:
    try:
        ctx.broker.partition(topic, index)
    except KafkaLiteError as e:
        return error_code(e)
    return 0


async def _commit(ctx: RequestContext, req: Any, commits: list[tuple[str, int, int, str, int]]) -> int:
    member_id = getattr(req, "member_id", "")
    if member_id:
        group_error = ctx.broker.groups.validate_offset_commit(
            req.group_id, member_id, req.generation_id, group_instance_id=req.group_instance_id
        )
        if group_error:
            refused(ctx, req.transactional_id, group_error, f"group {req.group_id} member {member_id}")
            return int(group_error)
    code = await ctx.broker.transactions.commit_offsets(
        req.transactional_id,
        req.group_id,
        req.producer_id,
        req.producer_epoch,
        commits,
        implicit_add=ctx.version >= FIRST_IMPLICIT_ADD,
    )
    return answer_code(ctx, req.transactional_id, code, FIRST_FENCED_VERSION)


@handles(ApiKey.TXN_OFFSET_COMMIT, versions=range(0, 6))
async def txn_offset_commit(ctx: RequestContext, req: Any) -> Any:
    checked = []
    commits: list[tuple[str, int, int, str, int]] = []
    for topic in req.topics:
        errors = [_partition_error(ctx, topic.name, p.partition_index) for p in topic.partitions]
        checked.append((topic, errors))
        commits.extend(
            (
                topic.name,
                p.partition_index,
                p.committed_offset,
                p.committed_metadata or "",
                getattr(p, "committed_leader_epoch", -1),
            )
            for p, code in zip(topic.partitions, errors, strict=True)
            if not code
        )
    commit_code = await _commit(ctx, req, commits) if commits else 0
    topics = [
        ctx.build(
            "TxnOffsetCommitResponseTopic",
            name=topic.name,
            partitions=[
                ctx.build(
                    "TxnOffsetCommitResponsePartition",
                    partition_index=p.partition_index,
                    error_code=code or commit_code,
                )
                for p, code in zip(topic.partitions, errors, strict=True)
            ],
        )
        for topic, errors in checked
    ]
    return ctx.build("TxnOffsetCommitResponse", throttle_time=0, topics=topics)
