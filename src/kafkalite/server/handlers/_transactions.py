"""What the transaction handlers share: logging every refusal with the client, the transactional id and the reason."""

from __future__ import annotations

import logging

from kafkalite.server.dispatch import RequestContext
from kafkalite.transactions.errors import CONCURRENT_TRANSACTIONS, NAMES, fenced_for

log = logging.getLogger("kafkalite.server.transactions")


def refused(ctx: RequestContext, transactional_id: str | None, code: int, detail: str = "") -> None:
    """Log a refusal (CONCURRENT_TRANSACTIONS, a routine "retry shortly", at debug; the others at info)."""
    if not code:
        return
    log.log(
        logging.DEBUG if code == CONCURRENT_TRANSACTIONS else logging.INFO,
        "Refused %s v%d from client=%s (%s) transactional_id=%s: %s%s",
        ctx.schema.request_type.__name__.removesuffix("Request"),
        ctx.version,
        ctx.header.client_id,
        ctx.client_host or "embedded",
        transactional_id,
        NAMES.get(code, f"error {code}"),
        f" ({detail})" if detail else "",
    )


def answer_code(ctx: RequestContext, transactional_id: str | None, code: int, first_fenced_version: int) -> int:
    """The code to send (PRODUCER_FENCED only to versions that know it), logged when it is a refusal."""
    code = fenced_for(code, ctx.version, first_fenced_version)
    refused(ctx, transactional_id, code)
    return code
