"""Console login and authorization: who is asking, and what the broker's ACLs let them see and do.

When the broker authenticates (any SASL listener) or authorizes (`authorizer.class.name`), the console asks for a
login and then acts as that principal, with the security layer's own credentials and authorizer:

- **Login.** `POST /login` checks username and password against the broker's credential store
  (`CredentialStore.check_password`: SCRAM keys recomputed by scramp from the stored salt, PLAIN's PBKDF2), off the
  event loop. A refusal waits `connection.failed.authentication.delay.ms`, logs the peer, and says nothing about
  which part was wrong. Attempts are counted per client address and per user name over `FAILURE_WINDOW_S` as they
  start (so parallel guesses count too) and a success takes its own back; past `MAX_FAILURES` further attempts are
  refused with 429 until the window has moved on, before any password is checked.
- **Sessions.** A session is a random token (`secrets.token_urlsafe(32)`) in a cookie (HttpOnly, SameSite=Strict,
  Path=/, Secure when the request came over TLS), mapped server side to the principal, its own form token and its
  expiry: `idle_s` after the last request and `lifetime_s` after the login, whichever comes first. A session ends at
  logout, at expiry, and when its user's credentials change or the user is deleted (the credential stamp taken at
  login no longer matches). At most `MAX_SESSIONS` are kept (the oldest go first). Sessions live in memory: a broker
  restart logs everyone out.
- **Authorization.** Every handler asks `access_of(request)`; `Access.may` is `Authorizer.authorize` for the
  session's principal and the client's address (the host an ACL names), and `Access.require` raises `Forbidden`, a
  403 page naming the operation and resource Kafka would have refused. Without security the console is open as
  before and `Access.may` is always true.

Which operations: listing or showing a topic, group or dead-letter topic needs DESCRIBE (what Metadata and
ListGroups hide), reading messages READ on the topic, a test message WRITE, creating a topic CREATE on the cluster or
the topic, deleting DELETE, editing configs ALTER_CONFIGS (seeing them DESCRIBE_CONFIGS), an offset reset READ on
the group and the topic (OffsetCommit's rule), a replay READ on the dead-letter topic and WRITE on every topic its
letters go back to; the overview's broker-wide figures (listeners, data directory, disk) need DESCRIBE on the cluster.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import quote

from aiohttp import web

from kafkalite.security.acls import CLUSTER_NAME, Operation, ResourceType
from kafkalite.security.authorizer import Authorizer
from kafkalite.security.credentials import MECHANISMS
from kafkalite.security.principal import USER, Principal
from kafkalite.security.service import Security
from kafkalite.security.settings import SecurityProtocol

logger = logging.getLogger("kafkalite.http")

COOKIE: Final = "kafkalite_session"
MAX_SESSIONS: Final = 10_000
MAX_FAILURES: Final = 5  # failed logins per client address, and per user name, within the window
FAILURE_WINDOW_S: Final = 300.0
MAX_TRACKED: Final = 10_000  # addresses and names whose failures are remembered (the oldest are forgotten)
MAX_FIELD: Final = 1024  # longest user name or password a login form may send
OPEN_PATHS: Final = frozenset({"/healthz", "/readyz", "/metrics", "/login"})


def needs_login(security: Security | None, protocols: Iterable[SecurityProtocol]) -> bool:
    """A console login is required when the broker authenticates (a SASL listener) or authorizes (an authorizer)."""
    if security is None:
        return False
    return security.settings.authorizer_enabled or any(protocol.uses_sasl for protocol in protocols)


class Forbidden(web.HTTPForbidden):
    """The authorizer refused what the console was asked to do; the message says which operation on what."""

    def __init__(self, message: str) -> None:
        super().__init__(text=message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Access:
    """What one request may do: the principal and authorizer of its session, or everything (`authorizer` None)."""

    principal: Principal | None
    host: str
    authorizer: Authorizer | None

    def may(self, operation: Operation, resource_type: ResourceType, name: str = CLUSTER_NAME) -> bool:
        if self.authorizer is None or self.principal is None:
            return True
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type, name)

    def require(self, operation: Operation, resource_type: ResourceType, name: str = CLUSTER_NAME) -> None:
        if not self.may(operation, resource_type, name):
            what = "the cluster" if resource_type is ResourceType.CLUSTER else f"{resource_type.name.lower()} {name!r}"
            raise Forbidden(f"{self.principal} is not allowed {operation.name} on {what} (the broker's ACLs refuse it)")

    def may_create_topic(self, name: str) -> bool:
        """CreateTopics' rule: CREATE on the cluster, or on the topic itself."""
        return self.may(Operation.CREATE, ResourceType.CLUSTER) or self.may(Operation.CREATE, ResourceType.TOPIC, name)

    def visible(self, resource_type: ResourceType, names: Iterable[str]) -> list[str]:
        """The names of `names` the principal may DESCRIBE (what Metadata and ListGroups would show)."""
        return [name for name in names if self.may(Operation.DESCRIBE, resource_type, name)]


OPEN: Final = Access(None, "", None)


@dataclass(slots=True)
class ConsoleSession:
    principal: Principal
    form_token: str
    stamp: tuple[str, ...] | None
    created: float
    last_seen: float


@dataclass
class Logins:
    """The login side of one listener: the session store and the failed-login limiter (see the module docstring)."""

    security: Security
    idle_s: float = 1800.0
    lifetime_s: float = 12 * 3600.0
    sessions: OrderedDict[str, ConsoleSession] = field(default_factory=OrderedDict)
    failures: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict)

    @property
    def mechanisms(self) -> tuple[str, ...]:
        """Password mechanisms a login may be checked with: those the broker enables, else all it stores."""
        enabled = tuple(m for m in self.security.settings.sasl_mechanisms if m in MECHANISMS)
        return enabled or MECHANISMS

    def session(self, token: str | None, now: float | None = None) -> ConsoleSession | None:
        """The live session `token` names (refreshing its idle time), or None; an expired or stale one is dropped."""
        if not token:
            return None
        found = self.sessions.get(token)
        if found is None:
            return None
        now = time.monotonic() if now is None else now
        expired = now - found.last_seen > self.idle_s or now - found.created > self.lifetime_s
        if expired or self.security.credentials.stamp(found.principal.name) != found.stamp:
            del self.sessions[token]
            return None
        found.last_seen = now
        return found

    def start(self, user: str, now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        token = secrets.token_urlsafe(32)
        stamp = self.security.credentials.stamp(user)
        self.sessions[token] = ConsoleSession(Principal(USER, user), secrets.token_urlsafe(32), stamp, now, now)
        while len(self.sessions) > MAX_SESSIONS:
            self.sessions.popitem(last=False)
        return token

    def end(self, token: str | None) -> None:
        if token:
            self.sessions.pop(token, None)

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self.failures.get(key)
        if times is None:
            return deque()
        while times and now - times[0] > FAILURE_WINDOW_S:
            times.popleft()
        return times

    def blocked_for(self, keys: Sequence[str], now: float | None = None) -> float:
        """Seconds until another attempt is accepted for these keys (0: now)."""
        now = time.monotonic() if now is None else now
        wait = 0.0
        for key in keys:
            times = self._recent(key, now)
            if len(times) >= MAX_FAILURES:
                wait = max(wait, FAILURE_WINDOW_S - (now - times[-MAX_FAILURES]))
        return wait

    def attempt(self, keys: Sequence[str], now: float | None = None) -> float:
        """Count an attempt against each key before its password is checked; returns the time it was counted at."""
        now = time.monotonic() if now is None else now
        for key in keys:
            times = self._recent(key, now)
            times.append(now)
            self.failures[key] = times
            self.failures.move_to_end(key)
        while len(self.failures) > MAX_TRACKED:
            self.failures.popitem(last=False)
        return now

    def succeeded(self, keys: Sequence[str], counted_at: float) -> None:
        """A login succeeded: its attempt no longer counts against any of `keys`."""
        for key in keys:
            times = self.failures.get(key)
            if times is not None and counted_at in times:
                times.remove(counted_at)

    async def check(self, user: str, password: str) -> bool:
        credentials = self.security.credentials
        return await asyncio.to_thread(credentials.check_password, user, password, self.mechanisms)

    async def refuse_slowly(self) -> None:
        await asyncio.sleep(self.security.settings.failed_authentication_delay_ms / 1000)


def safe_next(target: str | None) -> str:
    """Where a login goes on to: a path on this console only (never `//host` or a scheme: no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def login_location(request: web.Request) -> str:
    return "/login?next=" + quote(request.path_qs, safe="")
