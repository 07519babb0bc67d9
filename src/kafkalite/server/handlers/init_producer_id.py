"""InitProducerId (API key 22), versions 0-6.

v1 is v0 again · v2 is the first flexible version · v3 adds producer_id and producer_epoch, so a producer can bump
its epoch after an error (KIP-360) · v4 is v3 again · v5 is v4 again (KIP-890 marker) · v6 adds
enable_2pc/keep_prepared_txn and the ongoing-transaction fields.

Hands idempotent producers their (producer id, epoch). A transactional_id is remembered so a restart of that
producer bumps its epoch, but there are no transactions: transaction_timeout and keep_prepared_txn are ignored.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code


@handles(ApiKey.INIT_PRODUCER_ID, versions=range(0, 7))
async def init_producer_id(ctx: RequestContext, req: Any) -> Any:
    try:
        producer_id, epoch = await ctx.broker.init_producer_id(
            req.transactional_id, getattr(req, "producer_id", -1), getattr(req, "producer_epoch", -1)
        )
        code = 0
    except Exception as e:
        producer_id, epoch, code = -1, -1, error_code(e)
    return ctx.build(
        "InitProducerIdResponse",
        throttle_time=0,
        error_code=code,
        producer_id=producer_id,
        producer_epoch=epoch,
        ongoing_txn_producer_id=-1,
        ongoing_txn_producer_epoch=-1,
    )
