"""InitProducerId (API key 22), versions 0-6.

v1 is v0 again · v2 is the first flexible version · v3 adds producer_id and producer_epoch, so a producer can bump
its epoch after an error (KIP-360) · v4 may answer PRODUCER_FENCED (KIP-588; older versions get
INVALID_PRODUCER_EPOCH) · v5 is v4 again (KIP-890 marker) · v6 adds enable_2pc/keep_prepared_txn and the
ongoing-transaction fields (two-phase commit, KIP-939: not served, enable_2pc gets INVALID_REQUEST... answered as
an ordinary request since the fields default to off).

Without a transactional_id: an idempotent producer's (producer id, epoch). With one: the transaction coordinator's
answer (`broker.transactions`): a new producer id, or the same id with the epoch bumped, fencing older instances;
an ongoing transaction of that id is aborted first. transaction_timeout_ms above transaction.max.timeout.ms gets
INVALID_TRANSACTION_TIMEOUT.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code
from kafkalite.server.handlers._transactions import answer_code

FIRST_FENCED_VERSION = 4


@handles(ApiKey.INIT_PRODUCER_ID, versions=range(0, 7))
async def init_producer_id(ctx: RequestContext, req: Any) -> Any:
    expected_id, expected_epoch = getattr(req, "producer_id", -1), getattr(req, "producer_epoch", -1)
    if req.transactional_id:
        timeout_ms = int(req.transaction_timeout.total_seconds() * 1000)
        result = await ctx.broker.transactions.init_producer_id(
            req.transactional_id, timeout_ms, expected_id, expected_epoch
        )
        producer_id, epoch = result.producer_id, result.producer_epoch
        code = answer_code(ctx, req.transactional_id, result.error, FIRST_FENCED_VERSION)
    else:
        try:
            producer_id, epoch = await ctx.broker.init_producer_id(None, expected_id, expected_epoch)
            code = 0
        except Exception as e:
            producer_id, epoch, code = -1, -1, error_code(e)
    return ctx.build(
        "InitProducerIdResponse",
        throttle_time=0,
        error_code=code,
        producer_id=producer_id if not code else -1,
        producer_epoch=epoch if not code else -1,
        ongoing_txn_producer_id=-1,
        ongoing_txn_producer_epoch=-1,
    )
