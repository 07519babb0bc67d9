"""OAUTHBEARER (RFC 7628) with Kafka's default server validator: unsecured JWTs, for development only.

Client message: a GS2 header (`n,,` or `n,a=<authzid>,`), then `\\x01`-separated key=value pairs ending `\\x01\\x01`,
one of them `auth=Bearer <token>`. The token is an unsecured JWS as Kafka's `OAuthBearerUnsecuredJws` accepts it:
`base64url(header).base64url(payload).` with header `"alg": "none"` and an empty signature; the payload has a
string `sub` (the principal name), a numeric `exp` (seconds since the epoch) that has not passed, and an optional
numeric `iat` not in the future (both with `ALLOWED_SKEW_S` of clock skew); an authzid, when given, must equal
`sub`. Nothing is signed, so anyone may claim any name: enable OAUTHBEARER in `sasl.enabled.mechanisms` only where
that is acceptable. The session lasts until the token's `exp` at most (KIP-368).
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any, Final

from kafkalite.errors import AuthenticationError
from kafkalite.security.principal import USER, Principal

ALLOWED_SKEW_S: Final = 30.0


def _claims_part(part: str) -> dict[str, Any]:
    padded = part + "=" * (-len(part) % 4)
    value = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _refused(reason: str) -> AuthenticationError:
    return AuthenticationError(f"Authentication failed: invalid OAUTHBEARER token ({reason})")


class OAuthBearerServer:
    mechanism = "OAUTHBEARER"

    def __init__(self) -> None:
        self.principal: Principal | None = None
        self.expires_at: float | None = None  # wall-clock seconds: the token's exp
        self._claimed: str | None = None

    @property
    def claimed(self) -> str | None:
        return self._claimed

    async def step(self, token: bytes) -> bytes:
        if self.principal is not None:
            raise _refused("exchange already complete")
        try:
            authzid, bearer = self._parse(token.decode("utf-8"))
            header_part, payload_part, signature = bearer.split(".")
            header, claims = _claims_part(header_part), _claims_part(payload_part)
        except (UnicodeDecodeError, ValueError) as e:
            raise _refused(f"malformed: {e}") from None
        if header.get("alg") != "none" or signature:
            raise _refused("only unsecured (alg none, no signature) tokens are accepted")
        subject, expires, issued = claims.get("sub"), claims.get("exp"), claims.get("iat", 0)
        now = time.time()
        self._claimed = subject if isinstance(subject, str) and subject else None
        if not isinstance(subject, str) or not subject:
            raise _refused("no sub claim")
        if isinstance(expires, bool) or not isinstance(expires, int | float) or expires + ALLOWED_SKEW_S <= now:
            raise _refused("missing or past exp claim")
        if isinstance(issued, bool) or not isinstance(issued, int | float) or issued - ALLOWED_SKEW_S > now:
            raise _refused("iat claim in the future")
        if authzid and authzid != subject:
            raise _refused("authorization id differs from sub")
        self.principal = Principal(USER, subject)
        self.expires_at = float(expires)
        return b""

    @staticmethod
    def _parse(message: str) -> tuple[str, str]:
        """(authzid, bearer token) from the client's initial response."""
        gs2, sep, rest = message.partition(",\x01") if ",\x01" in message else ("", "", "")
        if not sep or not rest.endswith("\x01\x01"):
            raise ValueError("not an OAUTHBEARER client response")
        flag, _, authzid = gs2.partition(",")
        if flag != "n":
            raise ValueError("channel binding is not supported")
        authzid = authzid[2:] if authzid.startswith("a=") else ""
        pairs = dict(kv.split("=", 1) for kv in rest[:-2].split("\x01") if kv)
        scheme, _, bearer = pairs.get("auth", "").partition(" ")
        if scheme.lower() != "bearer" or not bearer:
            raise ValueError("no auth=Bearer pair")
        return authzid, bearer
