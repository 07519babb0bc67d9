"""Ports for tests that cannot listen on port 0 themselves.

Tests run in two processes (`make test`), so a port is only safe while something holds it:

- `free_port()`: a port free a moment ago, for a broker started as a process of its own that must be told its port
  (Tansu advertises the URL it is given). The other test process could take it in between: the one window left.
- `refusing_port()`: a port nothing listens on, held bound (never listening) until this test process ends, so a
  connection to it is refused at once and nothing else can start listening there.
"""

from __future__ import annotations

import socket

HOST = "127.0.0.1"

_REFUSING: list[socket.socket] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def refusing_port() -> int:
    held = socket.socket()
    held.bind((HOST, 0))
    _REFUSING.append(held)
    return int(held.getsockname()[1])
