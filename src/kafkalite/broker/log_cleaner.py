"""The log cleaner: which compacted partition to clean next, cleaning it off the event loop, and swapping it in.

One cleaner thread per broker (Kafka's `log.cleaner.threads` default): every `backoff_s` (Kafka's
`log.cleaner.backoff.ms`), or at once after a cleaning, the cleaner asks every partition's log for its sections
(`Log.cleaning_stats`) and takes the dirtiest due one (`storage.compaction_policy`). A segment counts only once it
is durable (the file engine's recovery point covers it, moved by a flush that follows each roll in a worker thread),
so the cleaner first waits for the flush of the segments already rolled (`Log.checkpointed`, which starts one when
none runs): a cleaning asked for right after a write cleans every closed segment, not just those an earlier flush
happened to reach. Then:
  1. on the loop, `Log.prepare_cleaning` lists the segments to rewrite (closed, durable ones only);
  2. in the cleaner thread, the job reads them and writes their replacements aside, at no more than
     `io_max_bytes_per_second` (Kafka's `log.cleaner.io.max.bytes.per.second`); appends go on meanwhile, since
     they only ever touch the active segment, which no cleaning rewrites;
  3. on the loop, under the partition's append lock, `Log.finish_cleaning` swaps the new segments in (renames and
     a directory fsync: one short pause between two appends), unless the log moved or removed segments since 1.
The broker's knowledge enters through `CleaningContext`: the last batch of every producer it tracks (kept, so
idempotence state survives a restart), the partition's aborted transactions (from its `.txnindex`: their data is
dropped) and its first unstable offset (the oldest open transaction: nothing from its segment on is cleaned).
Closing stops the thread between two batches and discards the half-written segments.

Sharing the GIL: the cleaner thread hands the GIL back to the loop often and keeps a floor of `MIN_SHARE` of the
wall time (`storage.compactor.Throttle`), but a thread can only keep what it gets, and an event loop that never idles
releases the GIL for microseconds at a time (each `select` that finds work) and retakes it before the waiting thread
wakes: a 54 KB cleaning took a second of wall time for 13 ms of CPU under two busy embedded producers. So while a
cleaning runs, `GilLender` checks the cleaner thread's CPU time every `LEND_EVERY_S` from the loop, and when the
thread got less than `MIN_SHARE` of that time (and was not sleeping for its I/O rate) it sleeps the loop for `LEND_S`,
which leaves the GIL to the cleaner. The loop so gives up at most about a tenth of its time, and only while a
cleaning is starved.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kafkalite.broker.partition import Partition
from kafkalite.errors import KafkaLiteError
from kafkalite.storage.compaction_policy import CleaningStats, dirtiest
from kafkalite.storage.compactor import (
    MIN_SHARE,
    CleaningAborted,
    CleaningContext,
    CleaningJob,
    CleaningTotals,
    Throttle,
)

logger = logging.getLogger("kafkalite.cleaner")

LEND_EVERY_S = 0.01  # how often the loop looks at the cleaner thread's share while a cleaning runs
LEND_S = 0.001  # how long the loop sleeps, leaving the GIL to a starved cleaner


class GilLender:
    """The event loop's side of the cleaner's GIL floor (see the module docstring): started with the cleaner thread's
    id from inside that thread (`thread_started`, any thread), ticking on the loop until `stop()`."""

    def __init__(self, throttle: Throttle, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._throttle = throttle
        self._sleep = sleep
        self._loop = asyncio.get_running_loop()
        self._cpu_clock: int | None = None
        self._thread_id: int | None = None
        self._last_cpu = 0.0
        self._last_wall = 0.0
        self._handle: asyncio.TimerHandle | None = None
        if hasattr(time, "pthread_getcpuclockid"):  # without a per-thread CPU clock (Windows) nothing is lent
            self._handle = self._loop.call_later(LEND_EVERY_S, self._tick)
        self.lent = 0  # how many times the loop slept for the cleaner

    def thread_started(self) -> None:
        """Called by the cleaner thread as it starts the job: its CPU clock is the one to watch."""
        self._thread_id = threading.get_ident()

    def _tick(self) -> None:
        if self._cpu_clock is None and self._thread_id is not None:
            self._cpu_clock = time.pthread_getcpuclockid(self._thread_id)
            self._last_cpu, self._last_wall = time.clock_gettime(self._cpu_clock), time.monotonic()
        elif self._cpu_clock is not None:
            try:
                cpu = time.clock_gettime(self._cpu_clock)
            except OSError:  # the thread is gone: the job ended, and `stop()` is on its way
                self._handle = None
                return
            wall = time.monotonic()
            if not self._throttle.resting and cpu - self._last_cpu < MIN_SHARE * (wall - self._last_wall):
                self._sleep(LEND_S)
                self.lent += 1
                cpu, wall = time.clock_gettime(self._cpu_clock), time.monotonic()
            self._last_cpu, self._last_wall = cpu, wall
        self._handle = self._loop.call_later(LEND_EVERY_S, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


@dataclass(frozen=True, slots=True)
class CleaningReport:
    """One finished cleaning, as logged."""

    topic: str
    partition: int
    stats: CleaningStats
    totals: CleaningTotals
    seconds: float
    swapped: bool


class LogCleaner:
    """See the module docstring. `partitions` lists every partition when called (topics come and go)."""

    def __init__(
        self,
        partitions: Callable[[], Iterable[Partition]],
        *,
        backoff_s: float = 15.0,
        io_max_bytes_per_second: float | None = None,
        max_keys: int = 1_000_000,
        clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self._partitions = partitions
        self._backoff_s = backoff_s
        self._io_rate = io_max_bytes_per_second
        Throttle(io_max_bytes_per_second)  # refuses a rate that is not positive, before anything starts
        self._max_keys = max_keys
        self._clock = clock
        self._stopping = threading.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafkalite-cleaner")
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one cleaning at a time, whether the loop or a caller of clean_once starts it
        self.cleanings = 0
        self.bytes_cleaned = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kafkalite-cleaner")
        logger.info(
            "Log cleaner started: checks every %ss, I/O %s, at most %d keys per cleaning",
            self._backoff_s,
            "uncapped" if self._io_rate is None else f"capped at {self._io_rate:.0f} bytes/s",
            self._max_keys,
        )

    async def close(self) -> None:
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        async with self._lock:  # a clean_once still running finishes (aborted) before the thread goes
            pass
        self._executor.shutdown(wait=True)

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                report = await self.clean_once()
            except Exception:  # a failed cleaning (a file that vanished, a full disk) must not end the cleaner
                logger.exception("Log cleaning failed; retrying in %ss", self._backoff_s)
                report = None
            if report is None or not report.swapped:
                await asyncio.sleep(self._backoff_s)

    async def clean_once(self, now_ms: int | None = None) -> CleaningReport | None:
        """Clean the dirtiest due partition, if any; return what was done."""
        async with self._lock:
            if self._stopping.is_set():
                return None
            partitions = [partition for partition in self._partitions() if partition.log.config.compact]
            for partition in partitions:
                await partition.log.checkpointed()
            if self._stopping.is_set():  # closing began while this waited
                return None
            now = self._clock() if now_ms is None else now_ms
            candidates = []
            for partition in partitions:
                try:
                    stats = partition.log.cleaning_stats(now, partition.transactions.first_unstable_offset())
                except KafkaLiteError:  # closed under us (topic deleted)
                    continue
                if stats is not None:
                    candidates.append((partition, partition.log.config, stats))
            chosen = dirtiest(candidates)
            if chosen is None:
                return None
            return await self._clean(chosen[0], now)

    async def _clean(self, partition: Partition, now_ms: int) -> CleaningReport | None:
        log = partition.log
        context = CleaningContext(
            producer_last_offsets=partition.producers.last_offsets(),
            aborted=log.aborted_transactions(log.log_start_offset, log.log_end_offset),
            first_unstable_offset=partition.transactions.first_unstable_offset(),
            max_keys=self._max_keys,
        )
        job = partition.log.prepare_cleaning(now_ms, context)
        if job is None:
            return None
        stats = job.stats
        name = f"{partition.topic}-{partition.index}"
        logger.info(
            "Cleaning %s: offsets below %d, %d dirty of %d bytes (dirty ratio %.2f%s)",
            name,
            stats.first_uncleanable,
            stats.dirty_bytes,
            stats.dirty_bytes + stats.clean_bytes,
            stats.dirty_ratio,
            ", max.compaction.lag.ms passed" if stats.must_clean else "",
        )
        began = time.perf_counter()
        throttle = Throttle(self._io_rate)
        lender = GilLender(throttle)
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, _run_job, job, throttle, lender, self._stopping.is_set
            )
        except CleaningAborted:
            logger.info("Cleaning %s stopped: the broker is closing", name)
            return None
        finally:
            lender.stop()
        async with partition.lock:
            swapped = partition.log.finish_cleaning(job)
        seconds = time.perf_counter() - began
        assert job.outcome is not None or not swapped
        totals = job.outcome.totals if job.outcome is not None else CleaningTotals()
        if swapped:
            self.cleanings += 1
            self.bytes_cleaned += totals.bytes_read
            logger.info(
                "Cleaned %s in %.0f ms: %d bytes read, %d written (%.1f MB/s); %d of %d records kept",
                name,
                seconds * 1000,
                totals.bytes_read,
                totals.bytes_written,
                totals.bytes_read / seconds / 1e6 if seconds > 0 else 0.0,
                totals.records_kept,
                totals.records_read,
            )
        else:
            logger.info("Cleaning %s discarded: the log changed, or stopped for writes, while it ran", name)
        return CleaningReport(partition.topic, partition.index, stats, totals, seconds, swapped)


def _run_job(job: CleaningJob, throttle: Throttle, lender: GilLender, stopping: Callable[[], bool]) -> None:
    """The cleaner thread's work: tell the lender which thread to watch, then run the job."""
    lender.thread_started()
    job.run(throttle, stopping)
