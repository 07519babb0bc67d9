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

    await responses.put(asyncio.create_task(pending()))

    async def put_many() -> None:
        for _ in range(100):
            await responses.put(b"x" * MiB)

    putting = asyncio.create_task(put_many())
    await asyncio.sleep(0.2)
    assert not putting.done()
    assert responses.queued * MiB <= server_module.MAX_PENDING_BYTES + 2 * MiB
    putting.cancel()
    never.set()


async def test_pending_answers_count_the_request_bytes_they_keep() -> None:
    """An acks=all answer waiting for the disk keeps its request's frame alive (the records it appended are views of
    it), so those bytes count toward the bound: a client pipelining big produces against a slow disk stops being
    read at `MAX_PENDING_BYTES` of them, not only at `MAX_PENDING_RESPONSES` answers."""
    responses = _OrderedResponses(cast(Any, StalledWriter()), sendfile=False)
    never = asyncio.Event()

    async def pending() -> bytes:
        await never.wait()
        return b"p"

    taken = 0
    answers: list[asyncio.Task[bytes]] = []

    async def put_many() -> None:
        nonlocal taken
        for _ in range(100):
            answers.append(asyncio.create_task(pending()))
            await responses.put(answers[-1], held=MiB)
            taken += 1

    putting = asyncio.create_task(put_many())
    await asyncio.sleep(0.2)
    assert not putting.done()
    assert taken == server_module.MAX_PENDING_BYTES // MiB - 1  # the next put waits for room
    assert responses.queued == server_module.MAX_PENDING_BYTES // MiB
    putting.cancel()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(responses.close(), 0.1)  # the connection's end, bounded by its caller
    assert responses.queued == 0
    await asyncio.sleep(0)
    assert all(answer.cancelled() for answer in answers)  # the answers never written stopped waiting
