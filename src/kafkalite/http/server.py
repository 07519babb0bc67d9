"""The HTTP listener: console pages, `/metrics`, `/healthz` and `/readyz`, on the broker's own event loop.

aiohttp serves it: its `AppRunner` and a `TCPSite` (or a `SockSite` per socket bound before, as `kafkalite serve`
binds them: `on_demand`) start on an event loop that is already running (asyncio's or uvloop's,
started by `kafkalite serve`), install no signal handlers and configure no logging, so the HTTP side lives inside
the broker process as one more listener. Handlers are coroutines on the same loop as the Kafka listener and read the
broker directly; the rule that keeps the broker responsive is that no handler does work proportional to a log's
length (pages read offsets, sizes and at most one page of records; `/metrics` reads counters).

Every request passes `_protect` first: the Host rule (`guard.Guard`); then, when the broker authenticates, the
session (`auth.Logins`: no session, no page but the login page, `/static/`, `/metrics`, `/healthz` and `/readyz`),
which fixes the request's `auth.Access` (its principal and the broker's authorizer); then the write token and origin
on POSTs (the session's own token once logged in). A refusal by the authorizer (`auth.Forbidden`) becomes a 403 page
saying what was refused. Every answer carries a Content-Security-Policy that allows only this listener's own
scripts and styles, so a value shown in a page can never run as script and the console can never be framed.
"""

from __future__ import annotations

import functools
import logging
import secrets
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry

from kafkalite.broker import Broker
from kafkalite.errors import KafkaLiteError
from kafkalite.http.auth import (
    COOKIE,
    OPEN,
    OPEN_PATHS,
    Access,
    ConsoleSession,
    Forbidden,
    Logins,
    login_location,
    needs_login,
)
from kafkalite.http.guard import TOKEN_FIELD, TOKEN_HEADER, Guard
from kafkalite.http.listen import console_tls, console_url
from kafkalite.http.metrics import CONTENT_TYPE, exposition, registry_for
from kafkalite.http.render import render
from kafkalite.security.service import Security
from kafkalite.security.settings import SecurityProtocol, TlsSettings
from kafkalite.security.tls import TlsContextSource

logger = logging.getLogger("kafkalite.http")

DEFAULT_HTTP_PORT = 9644
MAX_NOTICES = 256
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Console:
    """What every handler of one listener shares: the broker, the guard, and where things listen."""

    broker: Broker
    guard: Guard
    listeners: Sequence[str]
    kafka_ready: bool = True
    logins: Logins | None = None  # None: the broker does not authenticate and the console needs no login
    notices: OrderedDict[str, tuple[str, str]] = field(default_factory=OrderedDict)

    @functools.cached_property
    def version(self) -> str:
        """KafkaLite's installed version, read on the first page (`importlib.metadata` imports the email parser);
        "unknown" when the package's metadata cannot be found (run from a source tree that was never installed)."""
        import importlib.metadata

        try:
            return importlib.metadata.version("kafkalite")
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    def notice(self, message: str, level: str = "ok") -> str:
        """Keep a one-shot message for the page a POST redirects to; returns its id for `?notice=`."""
        key = secrets.token_urlsafe(8)
        self.notices[key] = (level, message)
        while len(self.notices) > MAX_NOTICES:
            self.notices.popitem(last=False)
        return key


CONSOLE = web.AppKey("console", Console)


def console_of(request: web.Request) -> Console:
    return request.app[CONSOLE]


ACCESS = web.RequestKey("access", Access)
SESSION = web.RequestKey("session", ConsoleSession)


def access_of(request: web.Request) -> Access:
    """What this request may do (set by `_protect`): the session's principal, or everything without security."""
    access = request.get(ACCESS)
    return OPEN if access is None else access


def session_of(request: web.Request) -> ConsoleSession | None:
    return request.get(SESSION)


def page(
    request: web.Request, template: str, *, title: str, section: str, status: int = 200, **context: Any
) -> web.Response:
    """A console page: the template inside the common layout, with the write token and any pending notice."""
    console = console_of(request)
    notice = console.notices.pop(request.query.get("notice", ""), None)
    session = session_of(request)
    html = render(
        template,
        title=title,
        section=section,
        token=session.form_token if session is not None else console.guard.token,
        token_field=TOKEN_FIELD,
        local_only=console.guard.local_only,
        login=console.logins is not None,
        user=str(session.principal) if session is not None else None,
        notice=notice,
        version=console.version,
        **context,
    )
    return web.Response(text=html, content_type="text/html", status=status, headers={"Cache-Control": "no-store"})


def redirect(request: web.Request, location: str, message: str, level: str = "ok") -> web.HTTPSeeOther:
    """Post/redirect/get: the answer to a successful (or refused) write, showing `message` on the next page."""
    key = console_of(request).notice(message, level)
    path, hash_mark, fragment = location.partition("#")
    separator = "&" if "?" in path else "?"
    return web.HTTPSeeOther(f"{path}{separator}notice={key}{hash_mark}{fragment}")


async def form_of(request: web.Request) -> dict[str, str]:
    """The POSTed form, as strings (file fields are not used by the console)."""
    data = await request.post()
    return {name: value for name, value in data.items() if isinstance(value, str)}


@web.middleware
async def _protect(request: web.Request, handler: Handler) -> web.StreamResponse:
    console = console_of(request)
    host = request.headers.get("Host")
    if not console.guard.host_allowed(host):
        return web.Response(
            status=403,
            text=f"KafkaLite's console answers local requests only (Host: {host!r}); "
            "start it with --http-host to serve other hosts.\n",
        )
    session = None
    if console.logins is not None and request.path not in OPEN_PATHS and not request.path.startswith("/static/"):
        session = console.logins.session(request.cookies.get(COOKIE))
        if session is None:
            return _login_needed(request)
        request[SESSION] = session
        request[ACCESS] = Access(session.principal, request.remote or "", console.logins.security.authorizer)
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        token = request.headers.get(TOKEN_HEADER)
        if token is None and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            token = (await form_of(request)).get(TOKEN_FIELD)
        expected = session.form_token if session is not None else console.guard.token
        refusal = console.guard.write_refusal(request.headers, host, token, expected)
        if refusal is not None:
            logger.warning("Refused %s %s from %s: %s", request.method, request.path, request.remote, refusal)
            response: web.StreamResponse = page(
                request, "error.html", title="Refused", section="", status=403, message=refusal
            )
            response.headers.update(_SECURITY_HEADERS)
            return response
    try:
        response = await handler(request)
    except Forbidden as exc:
        logger.info("Console refused %s %s to %s: %s", request.method, request.path, session and session.principal, exc)
        response = page(request, "error.html", title="Not allowed", section="", status=403, message=exc.message)
    except web.HTTPNotFound as exc:  # an unknown page, topic, group: say so inside the console's own layout
        response = page(request, "error.html", title="Not found", section="", status=404, message=exc.text or "")
    except web.HTTPException as exc:
        exc.headers.update(_SECURITY_HEADERS)
        raise
    except KafkaLiteError as exc:
        response = page(request, "error.html", title="Error", section="", status=400, message=str(exc))
    response.headers.update(_SECURITY_HEADERS)
    return response


def _login_needed(request: web.Request) -> web.Response:
    """No live session: a page is sent to the login form (and back afterwards), anything else answers 401."""
    headers = {**_SECURITY_HEADERS, "Cache-Control": "no-store"}
    if request.method in ("GET", "HEAD") and not request.path.startswith("/api/"):
        return web.Response(status=303, headers={**headers, "Location": login_location(request)})
    return web.Response(status=401, text="Log in to the console first (/login).\n", headers=headers)


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def _readyz(request: web.Request) -> web.Response:
    console = console_of(request)
    if console.broker.running and console.kafka_ready:
        return web.Response(text="ready\n")
    return web.Response(status=503, text="not ready\n")


async def _metrics(request: web.Request) -> web.Response:
    registry = request.app[REGISTRY]
    body = exposition(registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


REGISTRY = web.AppKey("registry", CollectorRegistry)


def build_app(
    broker: Broker, guard: Guard, listeners: Sequence[str] = (), logins: Logins | None = None
) -> web.Application:
    from kafkalite.http import dead_letters, groups, login, messages, overview, topics

    app = web.Application(middlewares=[_protect], client_max_size=2 * 1024 * 1024)
    app[CONSOLE] = Console(broker, guard, tuple(listeners), logins=logins)
    app[REGISTRY] = registry_for(broker)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    static = resources.files("kafkalite.http") / "static"
    app.router.add_static("/static/", str(static), append_version=False)
    for module in (login, overview, topics, messages, groups, dead_letters):
        module.add_routes(app.router)
    return app


class HttpServer:
    """The console and `/metrics` listener of one broker; start it on the broker's running event loop.

    `security` is the Kafka server's (`KafkaServer.security`) and `kafka_protocols` its listeners' protocols: when
    they say the broker authenticates (`auth.needs_login`), the console asks for a login with the broker's own
    credentials and shows what the principal's ACLs allow. `session_idle_s` and `session_lifetime_s` bound a login.
    `tls` serves HTTPS with a Kafka listener's keystore (`ssl.keystore.location`, reloaded when the files change,
    TLS 1.2+; client certificates are not asked for); the session cookie is then `Secure`. `tls_source`, a context
    already built from such settings (`listen.console_tls`), is used instead of `tls`. `sockets` are listening
    sockets already bound to `host` and `port` (`listen.bind`) to serve on instead of binding; once started, closing
    the server closes them.
    """

    def __init__(
        self,
        broker: Broker,
        host: str = "127.0.0.1",
        port: int = DEFAULT_HTTP_PORT,
        *,
        listeners: Sequence[str] = (),
        security: Security | None = None,
        kafka_protocols: Sequence[SecurityProtocol] = (),
        session_idle_s: float = 1800.0,
        session_lifetime_s: float = 12 * 3600.0,
        tls: TlsSettings | None = None,
        shutdown_timeout_s: float = 2.0,
        tls_source: TlsContextSource | None = None,
        sockets: Sequence[socket.socket] = (),
    ) -> None:
        self.broker = broker
        self.host = host
        self.port = port
        self.guard = Guard(host)
        logins = None
        if security is not None and needs_login(security, kafka_protocols):
            logins = Logins(security, session_idle_s, session_lifetime_s)
        self.logins = logins
        self._tls = tls_source if tls_source is not None or tls is None else console_tls(tls)
        self.app = build_app(broker, self.guard, listeners, logins)
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=shutdown_timeout_s)
        self._sockets = list(sockets)
        self._started = False

    @property
    def url(self) -> str:
        """The console's address for a browser on this machine."""
        return console_url(self.host, self.port, self._tls is not None)

    @property
    def kafka_ready(self) -> bool:
        return self.app[CONSOLE].kafka_ready

    @kafka_ready.setter
    def kafka_ready(self, ready: bool) -> None:
        """`/readyz` answers 503 while this is False (before the Kafka listener is up, and while shutting down)."""
        self.app[CONSOLE].kafka_ready = ready

    async def start(self) -> None:
        """Bind (unless given sockets) and serve; with port 0 the kernel picks a free port, readable from `.port`
        afterwards."""
        ssl_context = None if self._tls is None else self._tls.server_context
        try:
            await self._runner.setup()
            sites: list[web.BaseSite] = []
            for sock in self._sockets:
                sites.append(web.SockSite(self._runner, sock, ssl_context=ssl_context))
            if not sites:
                sites.append(web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_context))
            for site in sites:
                await site.start()
        except BaseException:
            await self._runner.cleanup()
            raise
        self._started = True
        self.port = self._runner.addresses[0][1]
        reach = "local only" if self.guard.local_only else self.host
        logger.info("Console and /metrics on %s (%s%s)", self.url, reach, ", login required" if self.logins else "")

    async def close(self) -> None:
        if self._started:
            self._started = False
            await self._runner.cleanup()

    async def __aenter__(self) -> HttpServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
