"""AddPartitionsToTxn (API key 24), versions 0-5.

v1 is v0 again · v2 may answer PRODUCER_FENCED (KIP-588; older versions get INVALID_PRODUCER_EPOCH) · v3 is the
first flexible version · v4 batches several transactions in one request (`transactions`, each with verify_only) and
adds a top-level error_code: the form brokers use to ask a coordinator (KIP-890 part 1) · v5 is v4 again (it may
answer TRANSACTION_ABORTABLE, which this broker never needs to).

Versions 0-3 add the partitions to the transaction (starting it when none is ongoing). In v4+ a transaction with
verify_only adds nothing and answers, per partition, 0 when it is in the ongoing transaction and INVALID_TXN_STATE
when not; without verify_only it adds, as v0-3 do. A partition of an unknown topic answers
UNKNOWN_TOPIC_OR_PARTITION, and the partitions added with it answer OPERATION_NOT_ATTEMPTED (55): nothing is added.
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_OR_PARTITION
from kafkalite.server.handlers._transactions import answer_code, refused

FIRST_FENCED_VERSION = 2
OPERATION_NOT_ATTEMPTED = 55
TopicPartition = tuple[str, int]


async def _one_transaction(
    ctx: RequestContext, tid: str, producer_id: int, epoch: int, topics: Any, verify_only: bool
) -> dict[TopicPartition, int]:
    wanted = [(str(t.name), int(p)) for t in topics for p in t.partitions]
    unknown = set()
    for topic, index in wanted:
        try:
            ctx.broker.partition(topic, index)
        except KafkaLiteError:
            unknown.add((topic, index))
    if unknown:
        refused(ctx, tid, UNKNOWN_TOPIC_OR_PARTITION, f"unknown partitions {sorted(unknown)}")
        return {tp: UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else OPERATION_NOT_ATTEMPTED for tp in wanted}
    if verify_only:
        error, results = ctx.broker.transactions.verify_partitions(tid, producer_id, epoch, wanted)
        if error:
            code = answer_code(ctx, tid, error, FIRST_FENCED_VERSION)
            return dict.fromkeys(wanted, code)
        missing = sorted(tp for tp, code in results.items() if code)
        if missing:
            refused(ctx, tid, results[missing[0]], f"verify-only: not in the transaction: {missing}")
        return results
    result = await ctx.broker.transactions.add_partitions(tid, producer_id, epoch, wanted)
    return dict.fromkeys(wanted, answer_code(ctx, tid, result.error, FIRST_FENCED_VERSION))


def _topic_results(ctx: RequestContext, results: dict[TopicPartition, int]) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), code in results.items():
        by_topic.setdefault(topic, []).append(
            ctx.build("AddPartitionsToTxnPartitionResult", partition_index=index, partition_error_code=code)
        )
    return [
        ctx.build("AddPartitionsToTxnTopicResult", name=topic, results_by_partition=partitions)
        for topic, partitions in by_topic.items()
    ]


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, versions=range(0, 6))
async def add_partitions_to_txn(ctx: RequestContext, req: Any) -> Any:
    if ctx.version <= 3:
        results = await _one_transaction(
            ctx,
            req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch,
            req.v3_and_below_topics,
            verify_only=False,
        )
        return ctx.build(
            "AddPartitionsToTxnResponse", throttle_time=0, results_by_topic_v3_and_below=_topic_results(ctx, results)
        )
    answers = []
    for txn in req.transactions:
        results = await _one_transaction(
            ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics, txn.verify_only
        )
        answers.append(
            ctx.build(
                "AddPartitionsToTxnResult",
                transactional_id=txn.transactional_id,
                topic_results=_topic_results(ctx, results),
            )
        )
    return ctx.build("AddPartitionsToTxnResponse", throttle_time=0, error_code=0, results_by_transaction=answers)
