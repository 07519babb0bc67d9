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
ended is skipped, and the thread goes on serving the others. If running a batch fails outside its jobs (a helper
thread that cannot start), every job of it not known to have run fails with that error rather than leaving its
awaiter waiting. At exit, jobs already handed over are finished first (`_finish_at_exit`, as an executor's threads
are joined), so a round that a broker's `close()` did not redo itself still reaches the disk. A forked child starts
with no thread, no helpers and nothing handed over.

The price of one thread: the jobs of a batch run one after another, so an acks=all answer waits for the `fdatasync`s
of every partition in its batch (at most 8 on this thread; more run in parallel chunks) and for the batch before it,
and one job stuck on a disk that does not answer holds every partition of every loop in the process until it returns.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all

JOBS_PER_THREAD = 8
HELPER_THREADS = 7
EXIT_WAIT_S = 30.0  # at exit, how long the jobs already handed over may take to finish

Job = Callable[[], None]
_Batch = list[tuple[Job, asyncio.Future[None]]]
_Handed = tuple[asyncio.AbstractEventLoop, _Batch]

logger = logging.getLogger(__name__)


class _State:
    """The module's threads and queue, replaced whole in a forked child."""

    def __init__(self) -> None:
        self.batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher] = weakref.WeakKeyDictionary()
        self.handed: queue.SimpleQueue[_Handed] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.helpers: ThreadPoolExecutor | None = None
        self.unfinished = 0  # hand-overs not yet run to the end, for `_finish_at_exit`
        self.finished = threading.Condition(self.lock)


_state = _State()


async def run_fsync_job(job: Job) -> None:
    """Run the blocking `job` (fsyncs) in the fsync thread's next batch; see the module docstring."""
    loop = asyncio.get_running_loop()
    batcher = _state.batchers.get(loop)
    if batcher is None:
        batcher = _state.batchers[loop] = _Batcher()
    await batcher.submit(loop, job)


class _Batcher:
    """The jobs one loop submitted in its current turn, handed to the fsync thread when the loop next turns. It keeps
    no reference to its loop (the loop is the key it is stored under, weakly)."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: _Batch = []

    def submit(self, loop: asyncio.AbstractEventLoop, job: Job) -> asyncio.Future[None]:
        done: asyncio.Future[None] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._hand_over, loop)
        self._pending.append((job, done))
        return done

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        batch, self._pending = self._pending, []
        state = _state
        try:
            with state.lock:
                if state.thread is None or not state.thread.is_alive():
                    state.thread = threading.Thread(target=_serve, args=(state,), name="kafkalite-fsync", daemon=True)
                    state.thread.start()
                state.unfinished += 1
        except BaseException as exc:  # no thread to run them: the jobs fail rather than wait
            _complete(batch, [exc] * len(batch))
            raise
        state.handed.put((loop, batch))


def _serve(state: _State) -> None:
    """The fsync thread: each batch is everything handed over since the last one began."""
    while True:
        handed = [state.handed.get()]
        while True:
            try:
                handed.append(state.handed.get_nowait())
            except queue.Empty:
                break
        try:
            _run_batch(state, handed)
        except BaseException as exc:
            logger.exception("the fsync thread failed to run a batch of %d hand-overs", len(handed))
            for loop, batch in handed:  # jobs that may not have run fail, so that no awaiter waits for ever
                _post(loop, batch, [exc] * len(batch))
        finally:
            with state.finished:
                state.unfinished -= len(handed)
                state.finished.notify_all()
            del handed  # not kept (with its loops) while the thread waits for the next hand-over


def _run_batch(state: _State, handed: list[_Handed]) -> None:
    jobs = [job for _loop, batch in handed for job, _done in batch]
    outcomes: list[BaseException | None] = [None] * len(jobs)
    chunks: list[Future[None]] = []
    for at in range(JOBS_PER_THREAD, len(jobs), JOBS_PER_THREAD):
        try:
            chunks.append(_helper_pool(state).submit(_run_jobs, jobs, outcomes, at, at + JOBS_PER_THREAD))
        except RuntimeError:  # no helper thread (the interpreter is exiting, or none can start): run it here
            _run_jobs(jobs, outcomes, at, at + JOBS_PER_THREAD)
    _run_jobs(jobs, outcomes, 0, JOBS_PER_THREAD)
    wait_all(chunks)
    index = 0
    for loop, batch in handed:
        _post(loop, batch, outcomes[index : index + len(batch)])
        index += len(batch)


def _run_jobs(jobs: list[Job], outcomes: list[BaseException | None], start: int, stop: int) -> None:
    for index in range(start, min(stop, len(jobs))):
        try:
            jobs[index]()
        except BaseException as exc:  # handed to that job's awaiter
            outcomes[index] = exc


def _helper_pool(state: _State) -> ThreadPoolExecutor:
    with state.lock:
        if state.helpers is None:
            state.helpers = ThreadPoolExecutor(max_workers=HELPER_THREADS, thread_name_prefix="kafkalite-fsync-helper")
        return state.helpers


def _post(loop: asyncio.AbstractEventLoop, batch: _Batch, outcomes: list[BaseException | None]) -> None:
    """Complete `batch`'s futures on their loop; nothing to do once that loop is closed."""
    try:
        loop.call_soon_threadsafe(_complete, batch, outcomes)
    except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
        pass


def _complete(batch: _Batch, outcomes: list[BaseException | None]) -> None:
    for (_job, done), outcome in zip(batch, outcomes, strict=True):
        if done.done():
            continue
        if outcome is None:
            done.set_result(None)
        else:
            done.set_exception(outcome)


@atexit.register
def _finish_at_exit() -> None:
    """Let the fsync thread (a daemon) finish the jobs already handed over before the interpreter stops it."""
    state = _state
    with state.finished:
        state.finished.wait_for(lambda: state.unfinished <= 0, EXIT_WAIT_S)


def _after_fork_in_child() -> None:
    global _state
    _state = _State()


os.register_at_fork(after_in_child=_after_fork_in_child)
