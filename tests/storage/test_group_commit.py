"""`group_commit`: the fsync jobs submitted in one loop turn run as one batch, in parallel, and complete together."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from kafkalite.protocol.records import read_header
from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.storage.group_commit import run_fsync_job

from .logkit import make_batch


async def test_jobs_of_one_turn_run_in_parallel_threads() -> None:
    started = threading.Barrier(4, timeout=5)  # passes only if all four jobs run at the same time
    threads: set[str] = set()

    def job() -> None:
        threads.add(threading.current_thread().name)
        started.wait()

    await asyncio.gather(*(run_fsync_job(job) for _ in range(4)))
    assert len(threads) == 4
    assert all(name.startswith("kafkalite-fsync") for name in threads)


async def test_a_failing_job_fails_only_its_own_awaiter() -> None:
    def bad() -> None:
        raise OSError("disk gone")

    results = await asyncio.gather(run_fsync_job(bad), run_fsync_job(lambda: None), return_exceptions=True)
    assert isinstance(results[0], OSError) and results[1] is None


async def test_no_awaiter_resumes_before_its_job_returned() -> None:
    finished: list[float] = []

    def slow() -> None:
        time.sleep(0.05)
        finished.append(time.perf_counter())

    await run_fsync_job(slow)
    assert finished and finished[0] <= time.perf_counter()


async def test_eight_partition_logs_sync_in_one_batch(tmp_path: Path) -> None:
    logs = [PartitionLog.open(tmp_path / f"t-{n}", LogConfig()) for n in range(8)]
    try:
        await asyncio.gather(*(log.sync() for log in logs))  # the opening round
        for log in logs:
            batch = make_batch(3)
            log.append(batch, read_header(batch))
        await asyncio.gather(*(log.sync() for log in logs))
        for log in logs:
            assert log._synced_sequence == log._write_sequence  # type: ignore[attr-defined]
    finally:
        for log in logs:
            log.close()


def test_a_batch_whose_loop_closed_is_dropped_quietly() -> None:
    loop = asyncio.new_event_loop()
    release = threading.Event()

    async def submit() -> None:
        asyncio.ensure_future(run_fsync_job(release.wait))
        await asyncio.sleep(0.01)  # the batch is handed to the pool

    loop.run_until_complete(submit())
    loop.close()
    release.set()  # the job finishes after its loop is gone: no exception escapes the worker thread
    time.sleep(0.05)


pytestmark = pytest.mark.timeout(60)
