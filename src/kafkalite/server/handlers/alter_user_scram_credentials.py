"""AlterUserScramCredentials (API key 51), version 0.

v0 is the only version (flexible). Upsertions carry what the client computed (salt, iterations, salted password),
so the password never crosses the wire; the broker keeps RFC 5802's StoredKey and ServerKey from it. Deletions name
a user and mechanism. One result per user, as Kafka answers: UNSUPPORTED_SASL_MECHANISM for a mechanism other than
SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2), UNACCEPTABLE_CREDENTIAL for an empty name, salt or password or iterations
outside [4096, 16384], RESOURCE_NOT_FOUND for deleting a credential that does not exist, DUPLICATE_RESOURCE when a
user appears more than once in the request. A user with any error has none of its alterations applied. Needs ALTER
on the cluster (checked by dispatch).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.security.credentials import MAX_ITERATIONS, MIN_ITERATIONS, scram_from_salted_password
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code, error_message
from kafkalite.server.handlers.create_acls import SECURITY_DISABLED
from kafkalite.server.handlers.describe_user_scram_credentials import DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND

UNSUPPORTED_SASL_MECHANISM: Final = 33
UNACCEPTABLE_CREDENTIAL: Final = 93
MECHANISMS: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


def _problem(ctx: RequestContext, change: Any, upsert: bool) -> tuple[int, str] | None:
    if change.mechanism not in MECHANISMS:
        return UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {change.mechanism}"
    if not change.name:
        return UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if upsert:
        if not MIN_ITERATIONS <= change.iterations <= MAX_ITERATIONS:
            return UNACCEPTABLE_CREDENTIAL, f"Iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}]"
        if not change.salt or not change.salted_password:
            return UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    elif ctx.security is not None and ctx.security.credentials.scram(change.name, MECHANISMS[change.mechanism]) is None:
        return RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
    return None


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, versions=range(0, 1))
async def alter_user_scram_credentials(ctx: RequestContext, req: Any) -> Any:
    changes = [(d, False) for d in req.deletions] + [(u, True) for u in req.upsertions]
    users = list(dict.fromkeys(change.name for change, _ in changes))
    counts = Counter(change.name for change, _ in changes)
    outcome: dict[str, tuple[int, str | None]] = {}
    for user in users:
        if ctx.security is None:
            outcome[user] = (SECURITY_DISABLED, "no credential store on this server")
        elif counts[user] > 1:
            outcome[user] = (DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        else:
            outcome[user] = (0, None)
    for change, upsert in changes:
        if outcome[change.name][0] == 0 and (problem := _problem(ctx, change, upsert)) is not None:
            outcome[change.name] = problem
    for change, upsert in changes:
        if outcome[change.name][0] != 0 or ctx.security is None:
            continue
        mechanism = MECHANISMS[change.mechanism]
        try:
            if upsert:
                credential = scram_from_salted_password(
                    mechanism, change.salt, change.salted_password, change.iterations
                )
                ctx.security.credentials.set_scram(change.name, mechanism, credential)
            else:
                ctx.security.credentials.delete(change.name, mechanism)
        except KafkaLiteError as e:
            outcome[change.name] = (error_code(e), error_message(e))
    results = [
        ctx.build("AlterUserScramCredentialsResult", user=user, error_code=code, error_message=message)
        for user, (code, message) in outcome.items()
    ]
    return ctx.build("AlterUserScramCredentialsResponse", throttle_time=0, results=results)
