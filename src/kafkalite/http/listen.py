"""The console's listening sockets and its address, without the web framework: `serve` binds them before its ready
line and loads the console later (`on_demand`), and `HttpServer` serves on them.

`bind(host, port)` listens on every address `host` resolves to, all on one port (the kernel's pick when `port` is 0);
`console_url(host, port, tls)` is the address a browser on this machine opens; `console_tls(settings)` the console's
TLS context from a Kafka listener's `ssl.*` settings.
"""

from __future__ import annotations

import dataclasses
import errno
import socket
import sys

from kafkalite.security.settings import ClientAuth, TlsSettings
from kafkalite.security.tls import TlsContextSource

BACKLOG = 128
_LOCAL_NAMES = ("127.0.0.1", "::1", "localhost", "", "0.0.0.0", "::")
_PICK_ATTEMPTS = 5  # port 0 on several addresses: the port the first got may be taken on another


def console_url(host: str, port: int, tls: bool) -> str:
    """The console's address for a browser on this machine (a wildcard or loopback host reads as `localhost`, an IPv6
    address is bracketed)."""
    shown = "localhost" if host in _LOCAL_NAMES else f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}/"


def console_tls(settings: TlsSettings) -> TlsContextSource:
    """The console's TLS context from a listener's settings: its keystore (read now, reloaded when the files change),
    never asking for a client certificate. Raises `InvalidConfigError` when the keystore cannot be loaded."""
    return TlsContextSource(dataclasses.replace(settings, client_auth=ClientAuth.NONE))


def bind(host: str, port: int) -> list[socket.socket]:
    """Non-blocking listening sockets for every address of `host` ("" or a wildcard: all interfaces), one port for
    all. Raises `OSError` (address in use, unknown host, ...) with nothing left open."""
    for attempt in range(_PICK_ATTEMPTS):
        try:
            return _bind_all(host, port)
        except OSError as exc:
            if port != 0 or exc.errno != errno.EADDRINUSE or attempt == _PICK_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises


def _bind_all(host: str, port: int) -> list[socket.socket]:
    found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    addresses = list(dict.fromkeys((family, address) for family, _, _, _, address in found))
    sockets: list[socket.socket] = []
    try:
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            if sys.platform != "win32":  # there it would let another process take the port
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # one socket per family, as the IPv4 one serves IPv4
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:  # the port the first address got, on the others too
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets
