"""Crash safety: SIGKILL a real writer, and damage copied logs on purpose; recovery keeps exactly the good batches."""

from __future__ import annotations

import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalite.protocol.records import iter_records, read_batches
from kafkalite.storage import LogConfig, PartitionLog

from .crash_writer import CONFIG as WRITER_CONFIG
from .crash_writer import expected_values
from .logkit import append, make_batch

WRITER = Path(__file__).with_name("crash_writer.py")
KILLS = 24


def read_everything(log: PartitionLog) -> list[bytes]:
    """Every stored batch, whole (read_batches refuses a torn one)."""
    batches: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        for position, header in read_batches(chunk):
            batches.append(chunk[position : position + header.size])
            offset = header.last_offset + 1
    return batches


@pytest.mark.slow
def test_sigkill_never_loses_a_synced_batch(tmp_path: Path) -> None:
    directory = tmp_path / "crash-0"
    rng = random.Random(20260516)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WRITER.parent), *sys.path])}
    highest_synced = -1
    for _ in range(KILLS):
        writer = subprocess.Popen(
            [sys.executable, str(WRITER), str(directory)], stdout=subprocess.PIPE, env=env, text=True
        )
        assert writer.stdout is not None
        first_line = writer.stdout.readline()  # the writer is up and syncing
        assert first_line, "the writer died before its first sync"
        time.sleep(rng.uniform(0.0, 0.25))
        writer.send_signal(signal.SIGKILL)
        rest, _ = writer.communicate()
        synced = [int(line) for line in [first_line, *rest.splitlines()] if line.strip()]
        highest_synced = max(highest_synced, *synced)

        log = PartitionLog.open(directory, WRITER_CONFIG)
        assert log.log_end_offset > highest_synced
        next_offset = 0
        for batch in read_everything(log):
            header = read_batches(batch)[0][1]
            assert header.base_offset == next_offset
            assert [r.value for r in iter_records(batch)] == expected_values(header.base_offset)
            next_offset = header.last_offset + 1
        assert next_offset == log.log_end_offset
        log.close()
    assert highest_synced > 1_000


def build_original(directory: Path, config: LogConfig, batches: int) -> list[tuple[int, int]]:
    """A one-segment log; returns (start position, size) of each batch."""
    log = PartitionLog.open(directory, config, fsync=False)
    for n in range(batches):
        append(log, make_batch(1 + n % 3, timestamp=5_000 + n, value_size=5 + 11 * (n % 5), tag=n))
    log.close()
    data = (directory / f"{0:020d}.log").read_bytes()
    return [(position, header.size) for position, header in read_batches(data)]


def damage_and_recover(
    original: Path, work: Path, config: LogConfig, damage: tuple[str, int]
) -> tuple[bytes, PartitionLog]:
    kind, where = damage
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    for path in original.iterdir():
        data = bytearray(path.read_bytes())
        if path.suffix == ".log":
            if kind == "truncate":
                del data[where:]
            else:
                data[where // 8] ^= 1 << (where % 8)
        (work / path.name).write_bytes(data)
    return (original / f"{0:020d}.log").read_bytes(), PartitionLog.open(work, config, fsync=False)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("config", "batches"),
    [(LogConfig(), 40), (LogConfig(index_interval_bytes=256), 120)],
    ids=["no-index-entries", "with-index-entries"],
)
def test_random_truncations_and_bit_flips_recover_to_the_last_good_batch(
    tmp_path: Path, config: LogConfig, batches: int
) -> None:
    logging.getLogger("kafkalite.storage").setLevel(logging.ERROR)
    original = tmp_path / "original-0"
    layout = build_original(original, config, batches)
    log_size = layout[-1][0] + layout[-1][1]
    index_entries = (original / f"{0:020d}.index").read_bytes()
    scanned_from = int.from_bytes(index_entries[-4:]) if index_entries else 0  # recovery checks batches from here
    rng = random.Random(batches)
    for attempt in range(500):
        if attempt % 2:
            damage = ("truncate", rng.randrange(0, log_size))
        else:
            damage = ("flip", rng.randrange(scanned_from * 8, log_size * 8))
        original_bytes, log = damage_and_recover(original, tmp_path / "work-0", config, damage)
        damaged_at = damage[1] if damage[0] == "truncate" else damage[1] // 8
        survivors = [n for n, (position, size) in enumerate(layout) if position + size <= damaged_at]
        if damage[0] == "flip":
            damaged_batch = len(survivors)
            start = layout[damaged_batch][0]
            if 12 <= damaged_at - start < 16:  # partition_leader_epoch: not covered by the CRC, as in Kafka
                survivors = list(range(len(layout)))
        kept = read_everything(log)
        expected = [original_bytes[layout[n][0] : layout[n][0] + layout[n][1]] for n in survivors]
        if damage[0] == "flip" and len(survivors) == len(layout):
            assert len(kept) == len(expected), damage
        else:
            assert kept == expected, damage
        assert log.size_bytes == sum(len(b) for b in expected), damage
        assert append(log, make_batch(1)) == (log.log_end_offset - 1, log.log_end_offset - 1)
        log.close()
