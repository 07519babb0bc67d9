"""SaslHandshake (API key 17), versions 0-1.

v0: the SASL tokens that follow travel in Kafka's legacy framing (raw size-prefixed tokens, no request header) ·
v1: they travel in SaslAuthenticate requests (KIP-152).

Answers with the listener's enabled mechanisms either way. A mechanism that is not enabled gets
UNSUPPORTED_SASL_MECHANISM; a handshake on a listener without SASL, or in the middle of an exchange, gets
ILLEGAL_SASL_STATE. After a successful login, a v1 handshake starts re-authentication (KIP-368) when sessions
expire (`connections.max.reauth.ms`).
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.security.session import ILLEGAL_SASL_STATE
from kafkalite.server.dispatch import RequestContext, handles


@handles(ApiKey.SASL_HANDSHAKE, versions=range(0, 2))
async def sasl_handshake(ctx: RequestContext, req: Any) -> Any:
    session = ctx.session
    if session is None:
        return ctx.build("SaslHandshakeResponse", error_code=ILLEGAL_SASL_STATE, mechanisms=[])
    code = session.handshake(req.mechanism, legacy=ctx.version == 0)
    return ctx.build("SaslHandshakeResponse", error_code=code, mechanisms=list(session.enabled_mechanisms))
