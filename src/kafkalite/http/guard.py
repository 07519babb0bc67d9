"""What keeps a browser from being turned against the console: Host checks and a write token.

Without security the console has no login, so it relies on two rules (with a login they still apply, and the token
is then the session's own, see `auth`):

1. **Local only by default.** Bound to a loopback address, the listener answers only requests whose `Host` names a
   loopback host (`localhost`, `127.0.0.1`, `[::1]`, with any port). That stops DNS rebinding: a hostile page whose
   name is made to resolve to 127.0.0.1 is same-origin with itself, not with us, and its requests carry its own
   name in `Host`, so they are refused before they can read a page (and its token).
2. **Writes need the token and a matching origin.** Every state-changing request (POST: create/delete topic, config
   edit, produce, offset reset, replay) must carry the listener's random token (a hidden form field, or the
   `X-KafkaLite-Token` header), which only pages served by this listener contain; a page elsewhere cannot read it
   (no CORS headers are ever sent). When the browser says where the request comes from (`Origin`,
   `Sec-Fetch-Site`), that must be this listener too. A cross-site form post or fetch therefore fails with 403.

Reads (GET) change nothing, so they need neither.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
TOKEN_FIELD = "csrf"
TOKEN_HEADER = "X-KafkaLite-Token"


def is_loopback(host: str) -> bool:
    """Is `host` (a name or address, IPv6 with or without brackets) a loopback host?"""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The host part of a `Host` header value (`name:port`, `[v6]:port`, or either without a port)."""
    value = host_header.strip()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The Host and write-token rules of one listener (see the module docstring)."""

    def __init__(self, bind_host: str) -> None:
        self.local_only = is_loopback(bind_host)  # "" or 0.0.0.0 binds every interface: not local
        self.token = secrets.token_urlsafe(32)

    def host_allowed(self, host_header: str | None) -> bool:
        if not self.local_only:
            return True
        return host_header is not None and is_loopback(host_name(host_header))

    def write_refusal(
        self, headers: Mapping[str, str], host_header: str | None, token: str | None, expected: str | None = None
    ) -> str | None:
        """Why this write must be refused, or None when it may go ahead; `expected` is the token the request must
        carry (a logged-in session's own), by default the listener's."""
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            return f"cross-site request refused (Sec-Fetch-Site: {site})"
        origin = headers.get("Origin")
        if origin is not None and origin != "null":
            if urlsplit(origin).netloc.lower() != (host_header or "").lower():
                return f"request from another origin refused ({origin})"
        elif origin == "null":
            return "request from an opaque origin refused"
        expected = self.token if expected is None else expected
        if token is None or not hmac.compare_digest(token.encode(), expected.encode()):
            return "missing or wrong form token: reload the page and try again"
        return None
