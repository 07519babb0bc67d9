"""SaslAuthenticate (API key 36), versions 0-2.

v0 carries one SASL token each way (KIP-152) · v1 adds session_lifetime_ms (KIP-368: the client re-authenticates
before it runs out) · v2 is the first flexible version.

A refused token gets SASL_AUTHENTICATION_FAILED with Kafka's one message for every failure, after
`connection.failed.authentication.delay.ms`, and the connection closes after that answer. A SaslAuthenticate
without a SaslHandshake first gets ILLEGAL_SASL_STATE and closes too.
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import AuthenticationError
from kafkalite.protocol.wire import ApiKey
from kafkalite.security.session import ILLEGAL_SASL_STATE, SaslState
from kafkalite.server.dispatch import RequestContext, failed_authentication, handles


def _answer(ctx: RequestContext, code: int, message: str | None, token: bytes, lifetime_ms: int = 0) -> Any:
    return ctx.build(
        "SaslAuthenticateResponse",
        error_code=code,
        error_message=message,
        auth_bytes=token,
        session_lifetime=lifetime_ms,
    )


@handles(ApiKey.SASL_AUTHENTICATE, versions=range(0, 3))
async def sasl_authenticate(ctx: RequestContext, req: Any) -> Any:
    session = ctx.session
    if session is None or ctx.security is None or session.state is not SaslState.AUTHENTICATE:
        if session is not None:
            session.close_after_answer = True
        return _answer(ctx, ILLEGAL_SASL_STATE, "SaslAuthenticate is only valid after SaslHandshake", b"")
    try:
        challenge = await session.authenticate(req.auth_bytes)
    except AuthenticationError as e:
        await failed_authentication(session, ctx.security)
        return _answer(ctx, e.error_code, str(e), b"")
    return _answer(ctx, 0, None, challenge, session.session_lifetime_ms)
