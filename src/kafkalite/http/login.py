"""The login page (`/login`) and logout (`POST /logout`) of a console whose broker authenticates.

The form posts user name and password with the listener's form token (a login from another site is refused like
any cross-site write). Rules, sessions and the failed-login limit are `auth.Logins`'; this module is the pages. A
successful login always starts a new session (a token planted before the login is never promoted) and goes on to
the page that asked for it (`?next=`, a path of this console only).
"""

from __future__ import annotations

import logging
import math

from aiohttp import web

from kafkalite.http.auth import COOKIE, MAX_FIELD, Logins, safe_next
from kafkalite.http.server import console_of, form_of, page

logger = logging.getLogger("kafkalite.http")


def _logins(request: web.Request) -> Logins:
    logins = console_of(request).logins
    if logins is None:
        raise web.HTTPNotFound(text="This console has no login: the broker runs without authentication.")
    return logins


def _form(request: web.Request, status: int, error: str | None, next_path: str, user: str = "") -> web.Response:
    return page(
        request,
        "login.html",
        title="Log in",
        section="login",
        status=status,
        error=error,
        next=next_path,
        user_name=user,
    )


async def login_page(request: web.Request) -> web.Response:
    _logins(request)
    return _form(request, 200, None, safe_next(request.query.get("next")))


async def login(request: web.Request) -> web.StreamResponse:
    logins = _logins(request)
    form = await form_of(request)
    user, password = form.get("username", ""), form.get("password", "")
    next_path = safe_next(form.get("next"))
    remote = request.remote or ""
    keys = (f"address:{remote}", f"user:{user}")
    wait = logins.blocked_for(keys)
    if wait > 0:
        logger.warning("Console login for %r from %s refused: too many failed logins", user, remote)
        seconds = math.ceil(wait)
        answer = _form(request, 429, f"Too many failed logins: try again in {seconds} s.", next_path, user)
        answer.headers["Retry-After"] = str(seconds)
        return answer
    counted_at = logins.attempt(keys)  # before the check: guesses sent in parallel count as well
    sensible = 0 < len(user) <= MAX_FIELD and len(password) <= MAX_FIELD
    if not sensible or not await logins.check(user, password):
        await logins.refuse_slowly()
        logger.warning("Console login for %r from %s refused: invalid credentials", user, remote)
        return _form(request, 401, "Login failed: unknown user or wrong password.", next_path, user)
    logins.succeeded(keys, counted_at)
    logins.end(request.cookies.get(COOKIE))
    token = logins.start(user)
    logger.info("Console login: User:%s from %s", user, remote)
    answer = web.Response(status=303, headers={"Location": next_path, "Cache-Control": "no-store"})
    answer.set_cookie(COOKIE, token, path="/", httponly=True, samesite="Strict", secure=request.secure)
    return answer


async def logout(request: web.Request) -> web.StreamResponse:
    logins = _logins(request)
    logins.end(request.cookies.get(COOKIE))
    answer = web.Response(status=303, headers={"Location": "/login", "Cache-Control": "no-store"})
    answer.del_cookie(COOKIE, path="/")
    return answer


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/login", login_page)
    router.add_post("/login", login)
    router.add_post("/logout", logout)
