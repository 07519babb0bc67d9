"""The handler loop's one step, shared by the embedded and the network consumer: call the handler, retry it with
exponential backoff, then dead-letter the message and move on.

A handler may be a plain function or a coroutine function. `CancelledError` always propagates (stopping a consumer
must not dead-letter the message in hand); any other exception counts as a failure. The loop never ends on a
handler's failure: after `max_retries` retries the message goes to the dead-letter topic through `dead_letter`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable

from kafkalite.client.records import Message

logger = logging.getLogger("kafkalite.consumer")

Handler = Callable[[Message], Awaitable[object] | object]
DeadLetterWriter = Callable[[Message, Exception], Awaitable[tuple[str, int, int]]]


async def handle_with_retries(
    name: str, handler: Handler, message: Message, max_retries: int, backoff: float, dead_letter: DeadLetterWriter
) -> None:
    """Run `handler(message)` until it succeeds or has failed `max_retries + 1` times; then `dead_letter` it."""
    delay = backoff
    for attempt in range(max_retries + 1):
        try:
            outcome = handler(message)
            if inspect.isawaitable(outcome):
                await outcome
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if attempt < max_retries:
                logger.info(
                    "%s handler failed on %s-%d offset=%d (attempt %d/%d): %r",
                    name,
                    message.topic,
                    message.partition,
                    message.offset,
                    attempt + 1,
                    max_retries + 1,
                    exc,
                )
                await asyncio.sleep(delay)
                delay *= 2
                continue
            where = await dead_letter(message, exc)
            logger.warning(
                "%s sent %s-%d offset=%d to %s after %d attempts: %r",
                name,
                message.topic,
                message.partition,
                message.offset,
                where[0],
                max_retries + 1,
                exc,
            )
