"""EndTxn (API key 26), versions 0-5.

v1 is v0 again · v2 may answer PRODUCER_FENCED (KIP-588; older versions get INVALID_PRODUCER_EPOCH) · v3 is the
first flexible version · v4 may answer TRANSACTION_ABORTABLE (KIP-890), never needed here · v5 (KIP-890 part 2,
transaction version 2) bumps the producer epoch at the end of every transaction and answers the new producer_id and
producer_epoch: past epoch 32766 a new producer id at epoch 0; an abort with no transaction ongoing is valid (it
bumps the epoch, writing no marker); a retry of an EndTxn that bumped the epoch gets the same answer again.

Commits or aborts: the coordinator prepares the outcome (persisted), writes a marker to every partition of the
transaction, syncs them, completes, and only then answers, so a read_committed consumer can see a committed
transaction as soon as its producer hears of the commit.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._transactions import answer_code

FIRST_FENCED_VERSION = 2
FIRST_EPOCH_BUMP_VERSION = 5


@handles(ApiKey.END_TXN, versions=range(0, 6))
async def end_txn(ctx: RequestContext, req: Any) -> Any:
    result = await ctx.broker.transactions.end_transaction(
        req.transactional_id,
        req.producer_id,
        req.producer_epoch,
        bool(req.committed),
        bump_epoch=ctx.version >= FIRST_EPOCH_BUMP_VERSION,
    )
    code = answer_code(ctx, req.transactional_id, result.error, FIRST_FENCED_VERSION)
    return ctx.build(
        "EndTxnResponse",
        throttle_time=0,
        error_code=code,
        producer_id=result.producer_id if not code else -1,
        producer_epoch=result.producer_epoch if not code else -1,
    )
