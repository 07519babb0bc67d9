"""One connection's security state: who it is, and where it stands in SASL authentication.

States (a SASL listener starts in HANDSHAKE; any other listener starts AUTHENTICATED)::

    HANDSHAKE ──SaslHandshake(mech)──► AUTHENTICATE ──last token accepted──► AUTHENTICATED
                                            │                                   │ session expired (KIP-368)
                                            └── token refused: FAILED (close)   │ or SaslHandshake (re-auth)
                                                                                ▼
                                                                     HANDSHAKE, principal kept

Rules: before AUTHENTICATED only ApiVersions, SaslHandshake and SaslAuthenticate are served (anything else closes
the connection, as Kafka does), and frames are capped at `sasl.server.max.receive.size`. A SaslHandshake v0 switches
the next tokens to Kafka's legacy framing: raw size-prefixed SASL tokens, no request header (`raw_tokens`).
Re-authentication must prove the same principal; a different one fails. With `connections.max.reauth.ms` set, a
session expires that long after it authenticated: the client must re-authenticate, and any other request after the
expiry closes the connection. The connection loop owns a `Session`; nothing here does I/O or sleeps.
"""

from __future__ import annotations

import enum
import time
from typing import Final

from kafkalite.errors import AuthenticationError
from kafkalite.security.credentials import CredentialStore
from kafkalite.security.principal import ANONYMOUS, Principal
from kafkalite.security.sasl import MechanismServer, failure, mechanism_server
from kafkalite.security.settings import SecurityProtocol, SecuritySettings

API_VERSIONS: Final = 18
SASL_HANDSHAKE: Final = 17
SASL_AUTHENTICATE: Final = 36
_BEFORE_AUTHENTICATION: Final = frozenset((API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE))

UNSUPPORTED_SASL_MECHANISM: Final = 33
ILLEGAL_SASL_STATE: Final = 34


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


class Session:
    """The security state of one connection (see the module docstring)."""

    __slots__ = (
        "_expires_at",
        "_mechanism",
        "_proven",
        "_settings",
        "_store",
        "close_after_answer",
        "host",
        "muted_until",
        "peer",
        "principal",
        "protocol",
        "raw_tokens",
        "state",
    )

    def __init__(
        self,
        protocol: SecurityProtocol,
        host: str,
        settings: SecuritySettings,
        store: CredentialStore,
        principal: Principal = ANONYMOUS,
    ) -> None:
        self.protocol = protocol
        self.host = host
        self.peer = host  # host:port once the server knows the port (log lines)
        self.principal = principal
        self._settings = settings
        self._store = store
        self.state = SaslState.HANDSHAKE if protocol.uses_sasl else SaslState.AUTHENTICATED
        self._mechanism: MechanismServer | None = None
        self.raw_tokens = False
        self.close_after_answer = False
        self.muted_until = 0.0  # loop time before which the connection reads no request (quota throttling)
        self._expires_at: float | None = None
        self._proven = False  # a SASL login succeeded once: re-authentication must prove the same principal

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.AUTHENTICATED and not self.expired

    @property
    def expired(self) -> bool:
        return self._expires_at is not None and time.monotonic() >= self._expires_at

    def allows(self, api_key: int) -> bool:
        """Whether a request with `api_key` may be served in the current state."""
        if self.state is SaslState.AUTHENTICATED and self._expires_at is None:
            return True  # every request of a session that cannot expire: one test, no property calls
        return api_key in _BEFORE_AUTHENTICATION or self.authenticated

    def max_frame_bytes(self, configured: int) -> int:
        return configured if self.authenticated else min(configured, self._settings.sasl_max_receive_bytes)

    def handshake(self, mechanism: str, *, legacy: bool) -> int:
        """Choose a mechanism; the Kafka error code (0 when accepted). `legacy`: SaslHandshake v0 (raw tokens)."""
        if not self.protocol.uses_sasl or self.state is SaslState.AUTHENTICATE:
            return ILLEGAL_SASL_STATE
        if self.state is SaslState.AUTHENTICATED and not (self._settings.reauthentication_ms and not legacy):
            return ILLEGAL_SASL_STATE
        if mechanism not in self._settings.sasl_mechanisms:
            return UNSUPPORTED_SASL_MECHANISM
        self._mechanism = mechanism_server(mechanism, self._store)
        self.state = SaslState.AUTHENTICATE
        self.raw_tokens = legacy
        return 0

    @property
    def enabled_mechanisms(self) -> tuple[str, ...]:
        return self._settings.sasl_mechanisms

    async def authenticate(self, token: bytes) -> bytes:
        """Feed one client token; the challenge to send back. `AuthenticationError` (state FAILED) when refused."""
        mechanism = self._mechanism
        if self.state is not SaslState.AUTHENTICATE or mechanism is None:
            self.state = SaslState.FAILED
            raise AuthenticationError("SaslAuthenticate before SaslHandshake")
        try:
            challenge = await mechanism.step(token)
        except AuthenticationError:
            self.state = SaslState.FAILED
            raise
        principal = mechanism.principal
        if principal is not None:
            if self._proven and principal != self.principal:
                self.state = SaslState.FAILED
                raise failure(mechanism.mechanism)
            self.principal = principal
            self._proven = True
            self.state = SaslState.AUTHENTICATED
            self.raw_tokens = False
            self._mechanism = None
            lifetime = self._settings.reauthentication_ms
            self._expires_at = time.monotonic() + lifetime / 1000 if lifetime else None
            token_expiry = getattr(mechanism, "expires_at", None)  # OAUTHBEARER: never past the token's exp
            if token_expiry is not None:
                left = max(0.0, token_expiry - time.time())
                self._expires_at = min(self._expires_at or float("inf"), time.monotonic() + left)
        return challenge

    @property
    def session_lifetime_ms(self) -> int:
        """SaslAuthenticate v1's session_lifetime_ms: 0 when sessions do not expire."""
        if self._expires_at is None:
            return 0
        return max(1, int((self._expires_at - time.monotonic()) * 1000))

    def mute(self, throttle_ms: int, now: float) -> None:
        """Read nothing more from this connection for `throttle_ms` after `now` (KIP-219's muted channel)."""
        if throttle_ms > 0:
            self.muted_until = max(self.muted_until, now + throttle_ms / 1000)

    @property
    def mechanism(self) -> str:
        return self._mechanism.mechanism if self._mechanism is not None else ""

    @property
    def claimed_principal(self) -> str:
        """Who the refused (or running) login claimed to be, as `User:name`, for the log; never its secret. A name
        is cut at 64 characters and shown escaped, so a hostile one cannot forge or bury log lines."""
        claimed = self._mechanism.claimed if self._mechanism is not None else None
        if claimed is None:
            return "unknown (no user name in the tokens)"
        shown = claimed[:64].encode("unicode_escape").decode("ascii")
        return f"User:{shown}" + ("..." if len(claimed) > 64 else "")
