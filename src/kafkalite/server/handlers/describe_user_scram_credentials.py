"""DescribeUserScramCredentials (API key 50), version 0.

v0 is the only version (flexible). A null user list describes every user with a SCRAM credential; a named user
without one gets RESOURCE_NOT_FOUND, a name given twice DUPLICATE_RESOURCE. Only mechanisms and iteration counts
are ever returned, never salts or keys. Needs DESCRIBE on the cluster (checked by dispatch).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from kafkalite.protocol.wire import ApiKey
from kafkalite.security.credentials import SCRAM_MECHANISMS
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers.create_acls import SECURITY_DISABLED

RESOURCE_NOT_FOUND: Final = 91
DUPLICATE_RESOURCE: Final = 92
SCRAM_MECHANISM_IDS: Final = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


def _result(ctx: RequestContext, user: str, code: int, message: str | None, infos: list[Any]) -> Any:
    return ctx.build(
        "DescribeUserScramCredentialsResult", user=user, error_code=code, error_message=message, credential_infos=infos
    )


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, versions=range(0, 1))
async def describe_user_scram_credentials(ctx: RequestContext, req: Any) -> Any:
    if ctx.security is None:
        return ctx.build(
            "DescribeUserScramCredentialsResponse",
            throttle_time=0,
            error_code=SECURITY_DISABLED,
            error_message="no credential store on this server",
            results=[],
        )
    known = {
        user: [(m, i) for m, i in mechanisms if m in SCRAM_MECHANISMS]
        for user, mechanisms in ctx.security.credentials.users().items()
    }
    known = {user: mechanisms for user, mechanisms in known.items() if mechanisms}
    names = list(known) if req.users is None else [u.name for u in req.users]
    counts = Counter(names)
    results = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            results.append(_result(ctx, name, DUPLICATE_RESOURCE, "Cannot describe the same user twice", []))
        elif name not in known:
            results.append(
                _result(ctx, name, RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist", [])
            )
        else:
            infos = [
                ctx.build("CredentialInfo", mechanism=SCRAM_MECHANISM_IDS[m], iterations=i) for m, i in known[name]
            ]
            results.append(_result(ctx, name, 0, None, infos))
    return ctx.build(
        "DescribeUserScramCredentialsResponse", throttle_time=0, error_code=0, error_message=None, results=results
    )
