"""DeleteAcls (API key 31), versions 1-3.

v1 adds pattern_type_filter · v2 is the first flexible version · v3 is v2 again.

Each filter gets its own result listing the bindings it removed; a filter with an UNKNOWN or out-of-range value gets
INVALID_REQUEST and removes nothing. Every valid filter is applied in one write. Needs ALTER on the cluster.
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.security.acls import AclFilter, InvalidAclError, acl_filter
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message
from kafkalite.server.handlers.create_acls import SECURITY_DISABLED


def _matching(ctx: RequestContext, bindings: list[Any]) -> list[Any]:
    return [
        ctx.build(
            "DeleteAclsMatchingAcl",
            error_code=0,
            error_message=None,
            resource_type=int(b.resource_type),
            resource_name=b.resource_name,
            pattern_type=int(b.pattern_type),
            principal=b.principal,
            host=b.host,
            operation=int(b.operation),
            permission_type=int(b.permission),
        )
        for b in bindings
    ]


def _result(ctx: RequestContext, code: int, message: str | None, bindings: list[Any]) -> Any:
    return ctx.build(
        "DeleteAclsFilterResult", error_code=code, error_message=message, matching_acls=_matching(ctx, bindings)
    )


@handles(ApiKey.DELETE_ACLS, versions=range(1, 4))
async def delete_acls(ctx: RequestContext, req: Any) -> Any:
    parsed: list[AclFilter | str] = []
    for f in req.filters:
        try:
            parsed.append(
                acl_filter(
                    f.resource_type_filter,
                    f.resource_name_filter,
                    f.pattern_type_filter,
                    f.principal_filter,
                    f.host_filter,
                    f.operation,
                    f.permission_type,
                )
            )
        except InvalidAclError as e:
            parsed.append(str(e))
    if ctx.security is None:
        results = [_result(ctx, SECURITY_DISABLED, "no authorizer on this server", []) for _ in parsed]
        return ctx.build("DeleteAclsResponse", throttle_time=0, filter_results=results)
    filters = [p for p in parsed if isinstance(p, AclFilter)]
    try:
        removed = iter(ctx.security.acls.remove(filters))
    except KafkaLiteError as e:
        results = [_result(ctx, error_code(e), error_message(e), []) for _ in parsed]
        return ctx.build("DeleteAclsResponse", throttle_time=0, filter_results=results)
    results = [
        _result(ctx, INVALID_REQUEST, p, []) if isinstance(p, str) else _result(ctx, 0, None, next(removed))
        for p in parsed
    ]
    return ctx.build("DeleteAclsResponse", throttle_time=0, filter_results=results)
