"""`run_in_thread`: blocking file work on a worker thread, which a cancelled caller still waits for.

`asyncio.to_thread` hands the caller's cancellation on at once, while the thread, which nothing can stop, goes on:
a start cancelled while it recovers a log would then unlock the data directory (and close the logs) under a thread
still writing or reading them. The broker's own file work (loading, creating and deleting topics, the metadata it
saves) goes through `run_in_thread` instead, so that its cleanup always runs after the thread has returned.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

logger = logging.getLogger(__name__)


async def run_in_thread(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` on the default executor's thread. When the caller is cancelled meanwhile, it goes on waiting
    for the thread and is cancelled once that returned (what the thread raised is then logged, not raised)."""
    loop = asyncio.get_running_loop()
    # A plain future, not a task: cancelling every task (as `asyncio.run` does on its way out) cannot reach it.
    running = loop.run_in_executor(None, functools.partial(function, *args))
    cancelled = False
    while not running.done():
        try:
            await asyncio.wait({running})
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        if not running.cancelled() and (error := running.exception()) is not None:
            logger.error("%s failed while its caller was being cancelled: %r", _name(function), error)
        raise asyncio.CancelledError
    return running.result()


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", repr(function))
