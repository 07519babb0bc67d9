"""One fsync round per event-loop turn across partitions: the blocking fsync jobs of every log, run together.

Each `PartitionLog` groups its own callers into rounds (see `partition_log`); a Produce over 8 partitions starts 8 such
rounds in the same loop turn. Run one by one through `asyncio.to_thread`, each costs a hand-off to the default
executor (at most `cpu_count + 4` threads, shared with everything else) and a wake-up of the loop when it is done. Here
the jobs submitted during one loop turn form one batch: handed to a pool of fsync threads at once when the loop next
turns, run in parallel (the device and the filesystem's journal can then merge the flushes: concurrent `fdatasync`s
of different files on ext4 join one journal commit), and completed together with a single wake-up of the loop when
the last of them returns.

Invariants: a job's awaiter resumes only after its own job returned (or raised: the exception is re-raised to that
awaiter alone); no job waits for a batch that starts after it was submitted. The pool is one per process, bounded
by `FSYNC_THREADS`; batches are kept per event loop, so logs driven by different loops never share one.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

FSYNC_THREADS = 16

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher] = weakref.WeakKeyDictionary()


async def run_fsync_job(job: Callable[[], None]) -> None:
    """Run the blocking `job` (fsyncs) in the next batch of this loop; see the module docstring."""
    loop = asyncio.get_running_loop()
    batcher = _batchers.get(loop)
    if batcher is None:
        batcher = _batchers[loop] = _Batcher(loop)
    await batcher.submit(job)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=FSYNC_THREADS, thread_name_prefix="kafkalite-fsync")
        return _pool


class _Batcher:
    """The jobs submitted on one loop since its last turn, and the hand-off of each batch to the pool."""

    __slots__ = ("__weakref__", "_loop", "_pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pending: list[tuple[Callable[[], None], asyncio.Future[None]]] = []

    def submit(self, job: Callable[[], None]) -> asyncio.Future[None]:
        done: asyncio.Future[None] = self._loop.create_future()
        if not self._pending:
            self._loop.call_soon(self._start)
        self._pending.append((job, done))
        return done

    def _start(self) -> None:
        batch, self._pending = self._pending, []
        outcomes: list[BaseException | None] = [None] * len(batch)
        remaining = [len(batch)]
        lock = threading.Lock()
        loop = self._loop

        def run(index: int, job: Callable[[], None]) -> None:
            try:
                job()
            except BaseException as exc:  # handed to that job's awaiter
                outcomes[index] = exc
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                try:
                    loop.call_soon_threadsafe(_complete, batch, outcomes)
                except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
                    pass

        pool = _executor()
        for index, (job, _done) in enumerate(batch):
            pool.submit(run, index, job)


def _complete(
    batch: list[tuple[Callable[[], None], asyncio.Future[None]]], outcomes: list[BaseException | None]
) -> None:
    for (_job, done), outcome in zip(batch, outcomes, strict=True):
        if done.done():
            continue
        if outcome is None:
            done.set_result(None)
        else:
            done.set_exception(outcome)
