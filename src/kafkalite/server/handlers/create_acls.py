"""CreateAcls (API key 30), versions 1-3.

v1 adds resource_pattern_type (LITERAL, PREFIXED) · v2 is the first flexible version · v3 is v2 again.

Each creation gets its own result: INVALID_REQUEST with a message naming the bad field, or no error. The valid ones
are stored together in one write; a binding that exists already is kept once, as Kafka does. Needs ALTER on the
cluster (checked by dispatch, like every request).
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.security.acls import AclBinding, InvalidAclError, binding
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message

SECURITY_DISABLED = 54


@handles(ApiKey.CREATE_ACLS, versions=range(1, 4))
async def create_acls(ctx: RequestContext, req: Any) -> Any:
    outcomes: list[tuple[int, str | None]] = []
    valid: list[AclBinding] = []
    for c in req.creations:
        try:
            valid.append(
                binding(
                    c.resource_type,
                    c.resource_name,
                    c.resource_pattern_type,
                    c.principal,
                    c.host,
                    c.operation,
                    c.permission_type,
                )
            )
        except InvalidAclError as e:
            outcomes.append((INVALID_REQUEST, str(e)))
        else:
            outcomes.append((0, None))
    if ctx.security is None:
        outcomes = [(SECURITY_DISABLED, "no authorizer on this server") for _ in outcomes]
    elif valid:
        try:
            ctx.security.acls.add(valid)
        except KafkaLiteError as e:
            outcomes = [(error_code(e), error_message(e)) if code == 0 else (code, m) for code, m in outcomes]
    results = [ctx.build("AclCreationResult", error_code=code, error_message=m) for code, m in outcomes]
    return ctx.build("CreateAclsResponse", throttle_time=0, results=results)
