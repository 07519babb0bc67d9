"""A connection's unwritten answers are bounded in bytes as well as in count, so a client that pipelines requests
with big answers and stops reading cannot grow the broker's memory beyond the bounds."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from kafkalite.server import server as server_module
from kafkalite.server.server import _OrderedResponses

pytestmark = pytest.mark.timeout(30)

MiB = 1 << 20


class StalledWriter:
    """A StreamWriter whose peer stopped reading: writes are kept, `drain()` never returns once anything is held."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    async def drain(self) -> None:
        if self.written:
            await asyncio.Event().wait()


async def test_a_big_ready_answer_reaches_the_transport_before_drain() -> None:
    writer = StalledWriter()
    responses = _OrderedResponses(cast(Any, writer), sendfile=False)
    putting = asyncio.create_task(responses.put(b"x" * MiB))
    await asyncio.sleep(0.05)
    assert writer.written == MiB  # written at once: the drain() that follows sees it and holds the loop
    assert not putting.done()
    putting.cancel()


async def test_queued_answers_behind_a_pending_one_are_bounded_in_bytes() -> None:
    writer = StalledWriter()
    responses = _OrderedResponses(cast(Any, writer), sendfile=False)
    never = asyncio.Event()

    async def pending() -> bytes:
        await never.wait()
        return b"p"

    await responses.put(pending())

    async def put_many() -> None:
        for _ in range(100):
            await responses.put(b"x" * MiB)

    putting = asyncio.create_task(put_many())
    await asyncio.sleep(0.2)
    assert not putting.done()
    assert responses.queued * MiB <= server_module.MAX_PENDING_BYTES + 2 * MiB
    putting.cancel()
    never.set()
