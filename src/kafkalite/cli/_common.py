"""Helpers every command shares: the one-line failure, the event loop runner, the log-level choice."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn

import click

LOG_LEVELS = click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False)


def run(coroutine: Coroutine[Any, Any, Any]) -> None:
    """Run on uvloop when it is installed (it is on Linux and macOS), else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(coroutine)
    else:
        uvloop.run(coroutine)


def fail(message: str) -> NoReturn:
    """One line on stderr naming the culprit, exit status 2: what a script or a person reading a terminal wants."""
    click.echo(f"kafkalite: {message}", err=True)
    sys.exit(2)
