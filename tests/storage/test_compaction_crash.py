"""A cleaning interrupted by power loss or kill -9 at any file operation leaves a log that reads as if it had
completed or never started: every key's latest record is there, offsets increase, no `.cleaned`/`.swap` is left.

The simulated disk is `powercut.PowerCutOps`; `Countdown` cuts the power (or kills the process) at its N-th file
operation, N drawn at random, so the cut falls anywhere in the cleaning: while segments are read, while the
`.cleaned` files are written or fsynced, between the renames of the swap, or after it.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from kafkalite.errors import KafkaLiteError
from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.storage.compactor import CleaningContext, Throttle

from .compaction_kit import latest_per_key, put, records_of
from .compaction_writer import CONFIG as WRITER_CONFIG
from .compaction_writer import KEYS, expected_record
from .logkit import FakeClock
from .powercut import PowerCutOps

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=128, compact=True, delete=False, min_cleanable_dirty_ratio=0)
HISTORIES = 80
KILLS = 10
WRITER = Path(__file__).with_name("compaction_writer.py")


class Countdown(PowerCutOps):
    """`PowerCutOps` that cuts the power, or kills the process, at its `calls`-th file operation."""

    def __init__(self, rng: random.Random, calls: int, *, kill: bool) -> None:
        super().__init__(rng)
        self.calls_left = calls
        self.kill_instead = kill
        self.after: PowerCutOps | None = None  # the next process's view of the disk, after a kill

    def _tick(self) -> None:
        self.calls_left -= 1
        if self.calls_left == 0:
            if self.kill_instead:
                self.after = self.kill()
            else:
                self.power_cut()

    def open(self, path: Path, flags: int) -> int:
        self._tick()
        return super().open(path, flags)

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
        self._tick()
        super().pwrite(fd, data, position)

    def pwritev(self, fd: int, parts: Sequence[bytes | bytearray | memoryview], position: int) -> None:
        self._tick()
        super().pwritev(fd, parts, position)

    def pread(self, fd: int, size: int, position: int) -> bytes:
        self._tick()
        return super().pread(fd, size, position)

    def fsync(self, fd: int) -> None:
        self._tick()
        super().fsync(fd)

    def fsync_directory(self, directory: Path) -> None:
        self._tick()
        super().fsync_directory(directory)

    def rename(self, source: Path, target: Path) -> None:
        self._tick()
        super().rename(source, target)

    def remove(self, path: Path) -> None:
        self._tick()
        super().remove(path)


def write_round(directory: Path, clock: FakeClock, rng: random.Random, model: dict[bytes, bytes | None]) -> None:
    """Append keyed records and tombstones, then close cleanly: all of it is durable (acknowledged)."""
    log = PartitionLog.open(directory, CONFIG, clock=clock, file_ops=PowerCutOps(rng))
    for _ in range(rng.randint(20, 60)):
        key = b"k%d" % rng.randrange(6)
        value = None if rng.random() < 0.1 else rng.randbytes(rng.randint(1, 60))
        put(log, [(key, value)], timestamp=clock())
        model[key] = value
    log.close()


def check(directory: Path, clock: FakeClock, model: dict[bytes, bytes | None]) -> None:
    log = PartitionLog.open(directory, CONFIG, clock=clock, fsync=False)
    try:
        records = records_of(log)
        offsets = [record.offset for record in records]
        assert offsets == sorted(set(offsets))
        seen = latest_per_key(records)
        assert {k: v for k, v in seen.items() if v is not None} == {k: v for k, v in model.items() if v is not None}
        assert all(seen.get(k) is None for k, v in model.items() if v is None)
        assert not [p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    finally:
        log.close()


class Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.completed = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.completed += "completing the cleaning" in record.getMessage()


@pytest.mark.slow
@pytest.mark.parametrize("kill", [False, True], ids=["power-cut", "kill-9"])
def test_a_cleaning_cut_at_any_file_operation_recovers_to_a_correct_log(tmp_path: Path, kill: bool) -> None:
    cleaner_logger = logging.getLogger("kafkalite.cleaner")
    seen = Seen()
    cleaner_logger.addHandler(seen)
    logging.getLogger("kafkalite.storage").setLevel(logging.ERROR)
    interrupted = finished = 0
    try:
        for seed in range(HISTORIES):
            rng = random.Random(seed)
            directory = tmp_path / f"h-{seed}"
            clock = FakeClock()
            model: dict[bytes, bytes | None] = {}
            for _ in range(rng.randint(1, 3)):
                write_round(directory, clock, rng, model)
                clock.now_ms += rng.choice([0, 500, 5000])
                ops = Countdown(rng, rng.randint(1, 250), kill=kill)
                try:
                    log = PartitionLog.open(directory, CONFIG, clock=clock, file_ops=ops)
                    job = log.prepare_cleaning(clock(), CleaningContext())
                    if job is not None:
                        job.run(Throttle(None), lambda: False)
                        log.finish_cleaning(job)
                        finished += 1
                except (KafkaLiteError, OSError):
                    interrupted += 1
                if ops.calls_left > 0:  # the cleaning ended first: cut now, tearing whatever it left unsynced
                    if kill:
                        ops.kill()
                    else:
                        ops.power_cut()
                check(directory, clock, model)
    finally:
        cleaner_logger.removeHandler(seen)
    assert interrupted > HISTORIES // 4, interrupted
    assert finished > HISTORIES // 4, finished
    assert seen.completed > 5, seen.completed  # cuts after the commit point, completed by recovery


@pytest.mark.slow
def test_sigkill_during_live_cleaning_keeps_the_latest_synced_record_of_every_key(tmp_path: Path) -> None:
    """A real process appends keyed records, syncs, and cleans in its cleaner thread; SIGKILL it anywhere."""
    directory = tmp_path / "crash-0"
    rng = random.Random(20261130)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WRITER.parent), *sys.path])}
    highest_synced = -1
    cleanings = 0
    for _ in range(KILLS):
        writer = subprocess.Popen(
            [sys.executable, str(WRITER), str(directory)], stdout=subprocess.PIPE, env=env, text=True
        )
        assert writer.stdout is not None
        first_line = writer.stdout.readline()
        assert first_line, "the writer died before its first sync"
        time.sleep(rng.uniform(0.05, 0.6))
        writer.send_signal(signal.SIGKILL)
        rest, _ = writer.communicate()
        lines = [first_line, *rest.splitlines()]
        highest_synced = max([highest_synced, *(int(line.split()[1]) for line in lines if line.startswith("synced"))])
        cleanings += sum(line.startswith("cleaned") for line in lines)

        log = PartitionLog.open(directory, WRITER_CONFIG, fsync=False)
        try:
            assert log.log_end_offset > highest_synced
            records = records_of(log)
            offsets = [record.offset for record in records]
            assert offsets == sorted(set(offsets))
            assert all((r.key, r.value) == expected_record(r.offset) for r in records)  # nothing invented
            last = {r.key: r.offset for r in records}
            for key in range(KEYS):  # the latest synced write of each key, or a later one, is there
                synced = [o for o in range(highest_synced + 1) if o % KEYS == key]
                if not synced:
                    continue
                if b"k%d" % key in last:
                    assert last[b"k%d" % key] >= synced[-1], key
                else:  # gone only as an expired tombstone: the latest write at or after the synced one deleted it
                    later = [o for o in range(synced[-1], log.log_end_offset) if o % KEYS == key]
                    assert expected_record(later[-1])[1] is None, key
        finally:
            log.close()
    assert cleanings > 0
