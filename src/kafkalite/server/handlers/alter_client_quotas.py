"""AlterClientQuotas (API key 49), versions 0-1.

v1 is the first flexible version. Each entry names an entity (user, client-id, or both; or ip; a null name is that
type's default) and sets or removes keys. Entries are checked first (INVALID_REQUEST for an unknown entity type, a
key that does not apply to the entity, or a value that is not a positive number) and the valid ones stored together;
`validate_only` stores nothing. producer_byte_rate and consumer_byte_rate are enforced from the next request on.
Needs ALTER_CONFIGS on the cluster (checked by dispatch).
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.security.quotas import Entity, InvalidQuotaError, check_change, entity
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message
from kafkalite.server.handlers.create_acls import SECURITY_DISABLED


@handles(ApiKey.ALTER_CLIENT_QUOTAS, versions=range(0, 2))
async def alter_client_quotas(ctx: RequestContext, req: Any) -> Any:
    outcomes: list[tuple[Any, int, str | None]] = []
    valid: list[tuple[Entity, str, float | None]] = []
    for entry in req.entries:
        target = entity((e.entity_type, e.entity_name) for e in entry.entity)
        changes = [(target, op.key, None if op.remove else float(op.value)) for op in entry.ops]
        try:
            for change in changes:
                check_change(*change)
        except InvalidQuotaError as e:
            outcomes.append((entry, INVALID_REQUEST, str(e)))
            continue
        valid.extend(changes)
        outcomes.append((entry, 0, None))
    if ctx.security is None:
        outcomes = [(entry, SECURITY_DISABLED, "no quota store on this server") for entry, _, _ in outcomes]
    elif valid:
        try:
            ctx.security.quotas.alter(valid, validate_only=req.validate_only)
        except KafkaLiteError as e:
            outcomes = [
                (entry, error_code(e), error_message(e)) if not code else (entry, code, m)
                for entry, code, m in outcomes
            ]
    entries = [
        ctx.build(
            "EntryData",
            error_code=code,
            error_message=message,
            entity=[
                ctx.build("EntityData", entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity
            ],
        )
        for entry, code, message in outcomes
    ]
    return ctx.build("AlterClientQuotasResponse", throttle_time=0, entries=entries)
