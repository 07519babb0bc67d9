"""`broker.log_cleaner.GilLender`: the loop sleeps for a cleaner thread that gets less than its share of the time,
and only then (not for one resting at its I/O rate, not for one that runs, not after the cleaning)."""

from __future__ import annotations

import asyncio
import threading
import time

from kafkalite.broker.log_cleaner import LEND_EVERY_S, LEND_S, GilLender
from kafkalite.storage.compactor import Throttle


async def watch(thread_work: str, *, resting: bool = False, ticks: int = 10) -> int:
    """Run a lender for `ticks` ticks over a thread that waits (no CPU) or spins (all the CPU it gets); its lends."""
    throttle = Throttle(None)
    throttle.resting = resting
    slept: list[float] = []
    lender = GilLender(throttle, sleep=lambda seconds: (slept.append(seconds), time.sleep(seconds)))
    done = threading.Event()

    def work() -> None:
        lender.thread_started()
        if thread_work == "wait":
            done.wait()
        else:
            while not done.is_set():
                sum(range(1000))  # holds the GIL between the interpreter's switches

    thread = threading.Thread(target=work)
    thread.start()
    try:
        await asyncio.sleep(LEND_EVERY_S * ticks)
    finally:
        lender.stop()
        done.set()
        thread.join()
    assert all(seconds == LEND_S for seconds in slept)
    assert lender.lent == len(slept)
    return lender.lent


async def test_the_loop_lends_the_gil_to_a_thread_that_gets_no_time() -> None:
    assert await watch("wait") >= 3  # a waiting thread stands for one that never wins the GIL


async def test_no_lending_to_a_thread_resting_at_its_io_rate() -> None:
    assert await watch("wait", resting=True) == 0


async def test_no_lending_to_a_thread_that_gets_its_share() -> None:
    assert await watch("spin") <= 2  # an idle loop leaves the spinning thread nearly all the time


async def test_nothing_ticks_after_stop() -> None:
    lender = GilLender(Throttle(None), sleep=lambda seconds: None)
    lender.thread_started()
    lender.stop()
    await asyncio.sleep(LEND_EVERY_S * 5)
    assert lender.lent == 0
