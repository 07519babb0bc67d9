"""ListTransactions (API key 66), versions 0-2 (KIP-664; flexible from v0).

v1 adds duration_filter (KIP-994: only transactions running for at least that many ms; -1 for all) · v2 adds
transactional_id_pattern (a regular expression the id must match fully; null or empty for all).

Filters combine with AND; an empty state or producer-id filter matches everything. State names this broker does not
know are echoed in unknown_state_filters. A pattern that is not a valid regular expression gets INVALID_REQUEST.
"""

from __future__ import annotations

import re
from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST
from kafkalite.transactions import TxnState


@handles(ApiKey.LIST_TRANSACTIONS, versions=range(0, 3))
async def list_transactions(ctx: RequestContext, req: Any) -> Any:
    unknown = [state for state in req.state_filters if TxnState.from_label(state) is None]
    pattern_text = getattr(req, "transactional_id_pattern", None)
    try:
        pattern = re.compile(pattern_text) if pattern_text else None
    except re.error:
        return ctx.build(
            "ListTransactionsResponse",
            throttle_time=0,
            error_code=INVALID_REQUEST,
            unknown_state_filters=[],
            transaction_states=[],
        )
    found = ctx.broker.transactions.list(
        req.state_filters, req.producer_id_filters, getattr(req, "duration_filter", -1)
    )
    states = [
        ctx.build(
            "TransactionState",
            transactional_id=txn.transactional_id,
            producer_id=txn.producer_id,
            transaction_state=txn.state.label,
        )
        for txn in found
        if pattern is None or pattern.fullmatch(txn.transactional_id)
    ]
    return ctx.build(
        "ListTransactionsResponse",
        throttle_time=0,
        error_code=0,
        unknown_state_filters=unknown,
        transaction_states=states,
    )
