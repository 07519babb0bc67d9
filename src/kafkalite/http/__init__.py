"""The HTTP side of a broker: the web console and `/metrics` (plus `/healthz`, `/readyz`) on one listener.

    async with HttpServer(broker, "127.0.0.1", 0) as http:     # on the broker's running event loop
        print(http.url)

A top layer beside `server/`: it reads the broker through its public methods and counters only (an import-linter
contract forbids storage, the wire server and the client), so the console shows what a Kafka client would see.
Modules: `server` (listener, middleware, page helpers), `guard` (local-only Host rule, write token), `metrics`
(the Prometheus collector), `render` (templates and display helpers), and one module per console section:
`overview`, `topics`, `messages`, `groups`, `dead_letters`; `listen` (binding, the console's address) and
`on_demand` (`kafkalite serve`'s console, loaded on its first connection) import no web framework. Templates and the
console's own CSS and JavaScript ship as package data: nothing is built, nothing is fetched from elsewhere.

Importing this package imports nothing else: `HttpServer` (and aiohttp with it) is imported when first named here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite.http.server import DEFAULT_HTTP_PORT, HttpServer

__all__ = ["DEFAULT_HTTP_PORT", "HttpServer"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # the web framework's import is most of a console's cost: only when asked for
        return getattr(importlib.import_module("kafkalite.http.server"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
