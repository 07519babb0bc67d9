"""DescribeTransactions (API key 65), version 0 (KIP-664; the first and only version, flexible).

Each requested transactional id answers its state (Kafka's state names), timeout, start time, producer id and
epoch, and the partitions of the ongoing transaction; an id the coordinator does not know answers
TRANSACTIONAL_ID_NOT_FOUND (105) with the fields at their defaults. With no transaction ongoing the start time is 0,
the field's default, where Kafka may put -1: kio (and so every kio-based client, and the fuzzer's oracle) cannot read a
negative timestamp, and a reader treating 0 as "none" loses nothing.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.transactions.errors import TRANSACTIONAL_ID_NOT_FOUND


def _state(ctx: RequestContext, transactional_id: str) -> Any:
    txn = ctx.broker.transactions.describe(transactional_id)
    if txn is None:
        return ctx.build(
            "TransactionState",
            error_code=TRANSACTIONAL_ID_NOT_FOUND,
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout=0,
            transaction_start_time=0,
            producer_id=-1,
            producer_epoch=-1,
            topics=[],
        )
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(index)
    return ctx.build(
        "TransactionState",
        error_code=0,
        transactional_id=transactional_id,
        transaction_state=txn.state.label,
        transaction_timeout=txn.timeout_ms,
        transaction_start_time=max(txn.start_ms, 0),
        producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch,
        topics=[ctx.build("TopicData", topic=topic, partitions=indexes) for topic, indexes in by_topic.items()],
    )


@handles(ApiKey.DESCRIBE_TRANSACTIONS, versions=range(0, 1))
async def describe_transactions(ctx: RequestContext, req: Any) -> Any:
    states = [_state(ctx, tid) for tid in req.transactional_ids]
    return ctx.build("DescribeTransactionsResponse", throttle_time=0, transaction_states=states)
