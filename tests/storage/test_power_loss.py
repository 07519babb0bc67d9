"""Power loss: random histories on a simulated disk (`powercut.PowerCutOps`), cut at random moments, then reopened.

Each history picks a small `segment_bytes` (so it rolls often), an index interval and maybe `retention_bytes`, then
lives one to three lives: open, a random mix of appends (acks=1: no sync), awaited syncs (acks=all), syncs left
running, retention, yields to the worker threads, clean close-and-reopen and kill -9-and-reopen, then a power cut.
After every reopen, and finally with the real `FileOps`, the log must hold every batch whose `sync()` completed,
intact at its offset; offsets run contiguously from log start to log end; every batch passes its CRC and is one the
history appended at that offset; the log takes an append afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections import defaultdict
from pathlib import Path

import pytest

from kafkalite.protocol.records import read_batches, rebased
from kafkalite.storage import LogConfig, PartitionLog

from .logkit import FakeClock, append, make_batch
from .powercut import TEARS, PowerCutOps

HISTORIES = int(os.environ.get("KAFKALITE_POWER_CUT_HISTORIES", "200"))
FIRST_SEED = int(os.environ.get("KAFKALITE_POWER_CUT_FIRST_SEED", "0"))  # to explore beyond the default histories


class History:
    """What one history appended and which of it was acknowledged."""

    def __init__(self, seed: int, directory: Path) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.directory = directory
        rng = self.rng
        self.config = LogConfig(
            segment_bytes=rng.choice([700, 1_500, 4_000]),
            index_interval_bytes=rng.choice([0, 150, 600]),
            retention_bytes=rng.choice([-1, 5_000, 9_000]),
            retention_ms=-1,
        )
        self.clock = FakeClock()
        self.written: dict[int, set[bytes]] = defaultdict(set)  # base offset -> every batch ever appended there
        self.acked: dict[int, bytes] = {}  # base offset -> the batch a completed sync() covered
        self.unacked: dict[int, bytes] = {}  # appended in this life, no sync() completed since
        self.log_start_before_cut = 0

    def append(self, log: PartitionLog) -> None:
        rng = self.rng
        batch = make_batch(rng.randint(1, 4), timestamp=self.clock.now_ms, value_size=rng.randint(1, 120))
        base, _ = append(log, batch)
        stored = b"".join(rebased(batch, base))  # as the log wrote it: with its base offset
        self.clock.now_ms += rng.randint(0, 3)
        self.written[base].add(stored)
        self.unacked[base] = stored

    def start_sync(self, log: PartitionLog) -> asyncio.Task[None]:
        covered = dict(self.unacked)

        def acknowledge(task: asyncio.Task[None]) -> None:
            if not task.cancelled() and task.exception() is None:
                self.acked.update(covered)  # only the batches appended before this sync() was called
                for base in covered:
                    self.unacked.pop(base, None)

        task = asyncio.get_running_loop().create_task(log.sync())
        task.add_done_callback(acknowledge)
        return task

    def check(self, log: PartitionLog) -> None:
        """The promise, checked against what this history appended and had acknowledged."""
        where = f"seed {self.seed}"
        assert log.log_start_offset <= self.log_start_before_cut, where
        offset, kept = log.log_start_offset, {}
        while offset < log.log_end_offset:
            chunk = log.read(offset, 1 << 16)
            assert chunk, where
            for position, header in read_batches(chunk):  # checks every CRC and that no byte is left over
                assert header.base_offset == offset or (position == 0 and header.base_offset <= offset), where
                batch = bytes(chunk[position : position + header.size])
                assert batch in self.written[header.base_offset], where
                kept[header.base_offset] = batch
                offset = header.last_offset + 1
        assert offset == log.log_end_offset, where
        for base, batch in self.acked.items():
            if base >= log.log_start_offset:  # below it: removed by retention, which the history asked for
                assert kept.get(base) == batch, f"{where}: acknowledged batch at {base} lost or changed"
        self.acked = {base: batch for base, batch in self.acked.items() if base >= log.log_start_offset}


async def live(history: History, ops: PowerCutOps, steps: int) -> None:
    """One life: open on the simulated disk, work, then lose power at a random moment."""
    log = PartitionLog.open(history.directory, history.config, clock=history.clock, file_ops=ops)
    history.check(log)
    history.unacked = {}
    running: list[asyncio.Task[None]] = []
    rng = history.rng
    for _ in range(steps):
        action = rng.random()
        if action < 0.55:
            history.append(log)
        elif action < 0.7:
            await history.start_sync(log)
        elif action < 0.78:
            running.append(history.start_sync(log))
        elif action < 0.88:
            await asyncio.sleep(rng.choice([0, 0, 0.0005]))  # let sync rounds and roll checkpoints progress
        elif action < 0.94:
            log.apply_retention(history.clock.now_ms)
        else:
            history.log_start_before_cut = log.log_start_offset
            if action < 0.97:
                log.close()
            else:  # kill -9: nothing is flushed, and what the next process recovers is still not on disk
                ops = ops.kill()
                running.clear()  # their fate died with the process; nobody heard back from them
            log = PartitionLog.open(history.directory, history.config, clock=history.clock, file_ops=ops)
            history.check(log)
            history.unacked = {}
    history.log_start_before_cut = log.log_start_offset
    ops.power_cut()
    for task in running:  # a sync the cut interrupted fails; nobody was told its batches were safe
        try:
            await task
        except Exception:  # any failure is fine here: its batches were never acknowledged
            pass


async def run_history(seed: int, directory: Path, tears: dict[str, int]) -> None:
    history = History(seed, directory)
    for _ in range(history.rng.randint(1, 3)):
        ops = PowerCutOps(history.rng)
        await live(history, ops, history.rng.randint(10, 70))
        for kind, count in ops.tears.items():
            tears[kind] += count
    log = PartitionLog.open(directory, history.config, clock=history.clock, fsync=False)  # real file ops
    history.check(log)
    end = log.log_end_offset
    assert append(log, make_batch(2)) == (end, end + 1), f"seed {seed}"
    await log.sync()
    log.close()


class RecoveryCounter(logging.Handler):
    """Counts the storage WARNINGs that show recovery cut a torn tail, or dropped segments after a cut."""

    SIGNS = ("recovery cut", "deleting every later segment")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = dict.fromkeys(self.SIGNS, 0)

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for sign in self.SIGNS:
            self.seen[sign] += sign in message


@pytest.mark.slow
async def test_power_cut_never_loses_a_synced_batch_and_leaves_a_valid_log(tmp_path: Path) -> None:
    storage_logger = logging.getLogger("kafkalite.storage")
    counter = RecoveryCounter()
    storage_logger.addHandler(counter)
    storage_logger.propagate = False  # every history cuts and rebuilds: counted, not printed
    level = storage_logger.level
    storage_logger.setLevel(logging.WARNING)  # another test may have raised it, which would hide what we count
    tears: dict[str, int] = dict.fromkeys(TEARS, 0)
    try:
        for seed in range(FIRST_SEED, FIRST_SEED + HISTORIES):
            await run_history(seed, tmp_path / f"p-{seed}", tears)
    finally:
        storage_logger.removeHandler(counter)
        storage_logger.propagate = True
        storage_logger.setLevel(level)
    assert all(count > HISTORIES // 10 for count in tears.values()), tears  # every kind of tear happened, often
    assert all(count > HISTORIES // 20 for count in counter.seen.values()), counter.seen
