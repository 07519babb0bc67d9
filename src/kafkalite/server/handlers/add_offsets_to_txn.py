"""AddOffsetsToTxn (API key 25), versions 0-4.

v1 is v0 again · v2 may answer PRODUCER_FENCED (KIP-588; older versions get INVALID_PRODUCER_EPOCH) · v3 is the
first flexible version · v4 may answer TRANSACTION_ABORTABLE (KIP-890), never needed here.

Adds the group's `__consumer_offsets` partition to the transaction, so that the offsets the producer then sends
with TxnOffsetCommit commit or abort with it.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._transactions import answer_code

FIRST_FENCED_VERSION = 2


@handles(ApiKey.ADD_OFFSETS_TO_TXN, versions=range(0, 5))
async def add_offsets_to_txn(ctx: RequestContext, req: Any) -> Any:
    result = await ctx.broker.transactions.add_offsets(
        req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
    )
    code = answer_code(ctx, req.transactional_id, result.error, FIRST_FENCED_VERSION)
    return ctx.build("AddOffsetsToTxnResponse", throttle_time=0, error_code=code)
