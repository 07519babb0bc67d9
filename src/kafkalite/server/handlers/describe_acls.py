"""DescribeAcls (API key 29), versions 1-3.

v1 adds pattern_type_filter (ANY, MATCH, LITERAL, PREFIXED) · v2 is the first flexible version · v3 is v2 again.

The bindings matching the filter, grouped by resource pattern as Kafka groups them. A filter with an UNKNOWN or
out-of-range value gets INVALID_REQUEST. Needs DESCRIBE on the cluster (checked by dispatch).
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.security.acls import AclBinding, InvalidAclError, acl_filter
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST
from kafkalite.server.handlers.create_acls import SECURITY_DISABLED


def _answer(ctx: RequestContext, code: int, message: str | None, bindings: list[AclBinding]) -> Any:
    groups: dict[tuple[int, str, int], list[Any]] = {}
    for b in bindings:
        groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
            ctx.build(
                "AclDescription",
                principal=b.principal,
                host=b.host,
                operation=int(b.operation),
                permission_type=int(b.permission),
            )
        )
    resources = [
        ctx.build("DescribeAclsResource", resource_type=t, resource_name=n, pattern_type=p, acls=acls)
        for (t, n, p), acls in groups.items()
    ]
    return ctx.build(
        "DescribeAclsResponse", throttle_time=0, error_code=code, error_message=message, resources=resources
    )


@handles(ApiKey.DESCRIBE_ACLS, versions=range(1, 4))
async def describe_acls(ctx: RequestContext, req: Any) -> Any:
    if ctx.security is None:
        return _answer(ctx, SECURITY_DISABLED, "no authorizer on this server", [])
    try:
        wanted = acl_filter(
            req.resource_type_filter,
            req.resource_name_filter,
            req.pattern_type_filter,
            req.principal_filter,
            req.host_filter,
            req.operation,
            req.permission_type,
        )
    except InvalidAclError as e:
        return _answer(ctx, INVALID_REQUEST, str(e), [])
    return _answer(ctx, 0, None, ctx.security.acls.find(wanted))
