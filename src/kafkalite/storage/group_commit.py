"""The fsync jobs of every partition log, run by one thread in batches: group commit across partitions.

Each `PartitionLog` groups its own callers into rounds (see `partition_log`), and a round's blocking work (the
`fdatasync` of its files) is a job for this module. A Produce over 8 partitions starts 8 rounds in the same loop turn.
Run one by one through `asyncio.to_thread`, each job was a hand-off to the default executor and a wake-up of the loop,
and on a busy loop every hand-off is paid in thread switches: a worker takes the interpreter lock from the loop's
thread to pick its job up, again when `fdatasync` returns and again to post the result (a profile of 8 partitions at
acks=all counted about 11 context switches per `fdatasync`, and the broker's CPU per message was twice that of
fsync=never). Here:

- the jobs a loop submits during one turn are handed over together when the loop next turns;
- one thread, `kafkalite-fsync`, takes everything handed over since its last batch began as its next batch (so a
  batch covers every partition that wrote meanwhile, from every loop in the process) and runs the jobs one after
  another, then wakes each loop once for all of its jobs in the batch;
- a batch of more than `JOBS_PER_THREAD` jobs (a Produce over hundreds of partitions) is cut into chunks of that
  many, run in parallel on up to `HELPER_THREADS` more threads, so a large batch does not take hundreds of
  `fdatasync`s end to end.

`docs/benchmarks.md` ("Group commit across partitions, again") has what it bought and what it costs.

Invariants: a job's awaiter resumes only after its own job returned (or raised: the exception is re-raised to that
awaiter alone); no job waits for a batch that begins after it was handed over; a loop that closed before its batch
ended is skipped, and the thread goes on serving the others. The thread is a daemon: a broker's `close()` syncs its
logs itself, so nothing waits on this thread at exit.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_all

JOBS_PER_THREAD = 8
HELPER_THREADS = 7

Job = Callable[[], None]
_Handed = tuple[asyncio.AbstractEventLoop, list[tuple[Job, asyncio.Future[None]]]]

logger = logging.getLogger(__name__)

_batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher] = weakref.WeakKeyDictionary()
_handed: queue.SimpleQueue[_Handed] = queue.SimpleQueue()
_thread_lock = threading.Lock()
_thread: threading.Thread | None = None
_helpers: ThreadPoolExecutor | None = None


async def run_fsync_job(job: Job) -> None:
    """Run the blocking `job` (fsyncs) in the fsync thread's next batch; see the module docstring."""
    loop = asyncio.get_running_loop()
    batcher = _batchers.get(loop)
    if batcher is None:
        batcher = _batchers[loop] = _Batcher(loop)
    await batcher.submit(job)


class _Batcher:
    """The jobs one loop submitted in its current turn, handed to the fsync thread when the loop next turns."""

    __slots__ = ("__weakref__", "_loop", "_pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pending: list[tuple[Job, asyncio.Future[None]]] = []

    def submit(self, job: Job) -> asyncio.Future[None]:
        done: asyncio.Future[None] = self._loop.create_future()
        if not self._pending:
            self._loop.call_soon(self._hand_over)
        self._pending.append((job, done))
        return done

    def _hand_over(self) -> None:
        batch, self._pending = self._pending, []
        _ensure_thread()
        _handed.put((self._loop, batch))


def _ensure_thread() -> None:
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_serve, name="kafkalite-fsync", daemon=True)
            _thread.start()


def _serve() -> None:
    """The fsync thread: each batch is everything handed over since the last one began."""
    while True:
        handed = [_handed.get()]
        while True:
            try:
                handed.append(_handed.get_nowait())
            except queue.Empty:
                break
        try:
            _run_batch(handed)
        except BaseException:  # never lose the thread: every job's awaiter would wait for ever
            logger.exception("the fsync thread failed to run a batch of %d hand-overs", len(handed))


def _run_batch(handed: list[_Handed]) -> None:
    jobs = [job for _loop, batch in handed for job, _done in batch]
    outcomes: list[BaseException | None] = [None] * len(jobs)
    if len(jobs) <= JOBS_PER_THREAD:
        _run_jobs(jobs, outcomes, 0, len(jobs))
    else:
        helpers = _helper_pool()
        starts = range(JOBS_PER_THREAD, len(jobs), JOBS_PER_THREAD)
        chunks = [helpers.submit(_run_jobs, jobs, outcomes, at, at + JOBS_PER_THREAD) for at in starts]
        _run_jobs(jobs, outcomes, 0, JOBS_PER_THREAD)
        wait_all(chunks)
    index = 0
    for loop, batch in handed:
        results = outcomes[index : index + len(batch)]
        index += len(batch)
        try:
            loop.call_soon_threadsafe(_complete, batch, results)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
            pass


def _run_jobs(jobs: list[Job], outcomes: list[BaseException | None], start: int, stop: int) -> None:
    for index in range(start, min(stop, len(jobs))):
        try:
            jobs[index]()
        except BaseException as exc:  # handed to that job's awaiter
            outcomes[index] = exc


def _helper_pool() -> ThreadPoolExecutor:
    global _helpers
    with _thread_lock:
        if _helpers is None:
            _helpers = ThreadPoolExecutor(max_workers=HELPER_THREADS, thread_name_prefix="kafkalite-fsync-helper")
        return _helpers


def _complete(batch: list[tuple[Job, asyncio.Future[None]]], outcomes: list[BaseException | None]) -> None:
    for (_job, done), outcome in zip(batch, outcomes, strict=True):
        if done.done():
            continue
        if outcome is None:
            done.set_result(None)
        else:
            done.set_exception(outcome)
