"""SASL mechanisms, server side: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677, through `scramp`);
OAUTHBEARER with unsecured tokens lives in `security.oauthbearer`.

A mechanism server is made per authentication and fed the client's tokens in order with `step(token)`, which returns
the next challenge (bytes to send back, possibly empty) or raises `AuthenticationError`. Once `principal` is set the
exchange has succeeded; a further `step` is a protocol error.

Failure never says why: an unknown user, a wrong password and a malformed token all raise the same
`AuthenticationError`. For SCRAM an unknown user gets a made-up salt (an HMAC of the name under a per-process key)
and the exchange fails at the proof, exactly where a wrong password fails, so the first answer does not tell an
attacker whether the user exists. PLAIN spends one PBKDF2 round either way for the same reason.

SCRAM user names arrive in RFC 5802's `saslname` form (`=2C` for `,` and `=3D` for `=`), which is undone here.
Kafka's SCRAM extensions (`tokenauth=true` for delegation tokens) are refused: KafkaLite has no delegation tokens.
As Kafka does, a client-final nonce is accepted when it ends with the server's nonce (librdkafka 2.0, Debian's kcat,
sends its own nonce twice); the proof is checked over the messages exactly as exchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
from typing import Final, Protocol

from kafkalite.errors import AuthenticationError
from kafkalite.security.credentials import MIN_ITERATIONS, SCRAM_MECHANISMS, CredentialStore
from kafkalite.security.oauthbearer import OAuthBearerServer
from kafkalite.security.principal import USER, Principal

_DECOY_KEY: Final = os.urandom(32)


def failure(mechanism: str) -> AuthenticationError:
    """Kafka's one message for every refused login."""
    return AuthenticationError(
        f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    )


class MechanismServer(Protocol):
    mechanism: str
    principal: Principal | None

    @property
    def claimed(self) -> str | None:
        """The user name the client's tokens claimed so far (for the log of a refused login; never a secret)."""
        ...

    async def step(self, token: bytes) -> bytes: ...


class PlainServer:
    """PLAIN: one token, `authzid NUL authcid NUL password`; authzid must be empty or the same user."""

    mechanism = "PLAIN"

    def __init__(self, store: CredentialStore) -> None:
        self._store = store
        self.principal: Principal | None = None
        self._claimed: str | None = None

    @property
    def claimed(self) -> str | None:
        return self._claimed

    async def step(self, token: bytes) -> bytes:
        if self.principal is not None:
            raise failure(self.mechanism)
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise failure(self.mechanism)
        try:
            authzid, user, password = (part.decode() for part in parts)
        except UnicodeDecodeError:
            raise failure(self.mechanism) from None
        self._claimed = user or None
        if not user or (authzid and authzid != user):
            raise failure(self.mechanism)
        if not await asyncio.to_thread(self._store.check_plain, user, password):  # PBKDF2 costs milliseconds
            raise failure(self.mechanism)
        self.principal = Principal(USER, user)
        return b""


def _unescape(saslname: str) -> str:
    return saslname.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """SCRAM: client-first → server-first, client-final → server-final."""

    def __init__(self, mechanism: str, store: CredentialStore) -> None:
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._store = store
        self._user: str | None = None
        self._known = False
        import scramp  # on the first SCRAM login, not at start-up (its asn1crypto imports are most of its cost)

        self._scram_error = scramp.ScramException
        self._server = scramp.ScramMechanism(mechanism).make_server(self._auth_info)
        self._round = 0
        self.principal: Principal | None = None

    @property
    def claimed(self) -> str | None:
        return self._user

    def _auth_info(self, saslname: str) -> tuple[bytes, bytes, bytes, int]:
        self._user = _unescape(saslname)
        credential = self._store.scram(self._user, self.mechanism)
        self._known = credential is not None
        if credential is not None:
            return credential.auth_info()
        decoy = hmac.new(_DECOY_KEY, f"{self.mechanism}\0{self._user}".encode(), hashlib.sha256).digest()
        return decoy[:16], decoy, decoy, MIN_ITERATIONS

    def _accept_prefixed_nonce(self, client_final: str) -> None:
        """Accept a client-final nonce that ends with ours, as Kafka does (librdkafka 2.0 repeats its own nonce in
        front). The proof still covers the exact messages exchanged, so this loosens nothing that matters."""
        for attribute in client_final.split(","):
            if attribute.startswith("r="):
                nonce, expected = attribute[2:], self._server.nonce  # scramp keeps its nonce as a `Nonce`
                if expected is not None and nonce != str(expected) and nonce.endswith(str(expected)):
                    self._server.nonce = type(expected)(nonce)
                return

    async def step(self, token: bytes) -> bytes:
        self._round += 1
        try:
            text = token.decode()
            if self._round == 1:
                if ",tokenauth=" in text:
                    raise failure(self.mechanism)
                self._server.set_client_first(text)
                return str(self._server.get_server_first()).encode()
            if self._round == 2:
                self._accept_prefixed_nonce(text)
                self._server.set_client_final(text)
                if not self._known or self._user is None:
                    raise failure(self.mechanism)
                final = str(self._server.get_server_final()).encode()
                self.principal = Principal(USER, self._user)
                return final
        except (self._scram_error, UnicodeDecodeError, ValueError, KeyError):
            raise failure(self.mechanism) from None
        raise failure(self.mechanism)


def mechanism_server(mechanism: str, store: CredentialStore) -> MechanismServer:
    if mechanism == "PLAIN":
        return PlainServer(store)
    if mechanism == "OAUTHBEARER":
        return OAuthBearerServer()
    return ScramServer(mechanism, store)
