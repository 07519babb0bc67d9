"""DescribeClientQuotas (API key 48), versions 0-1.

v1 is the first flexible version. Components filter entities by type: match_type 0 = that exact name, 1 = the
default entity of the type (a null name), 2 = any entity of the type; `strict` keeps only entities of exactly the
component types. An unknown entity type or match type gets INVALID_REQUEST. Needs DESCRIBE_CONFIGS on the cluster
(checked by dispatch).
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.security.quotas import ENTITY_TYPES, describe
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST
from kafkalite.server.handlers.create_acls import SECURITY_DISABLED


def _answer(ctx: RequestContext, code: int, message: str | None, entries: list[Any] | None) -> Any:
    return ctx.build(
        "DescribeClientQuotasResponse", throttle_time=0, error_code=code, error_message=message, entries=entries
    )


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, versions=range(0, 2))
async def describe_client_quotas(ctx: RequestContext, req: Any) -> Any:
    if ctx.security is None:
        return _answer(ctx, SECURITY_DISABLED, "no quota store on this server", None)
    components = [(c.entity_type, c.match_type, c.match) for c in req.components]
    for entity_type, match_type, _ in components:
        if entity_type not in ENTITY_TYPES or match_type not in (0, 1, 2):
            return _answer(ctx, INVALID_REQUEST, f"invalid component {entity_type!r}/{match_type}", None)
    found = describe(ctx.security.quotas.items(), components, strict=req.strict)
    entries = [
        ctx.build(
            "EntryData",
            entity=[ctx.build("EntityData", entity_type=t, entity_name=n) for t, n in target],
            values=[ctx.build("ValueData", key=k, value=v) for k, v in sorted(values.items())],
        )
        for target, values in found
    ]
    return _answer(ctx, 0, None, entries)
