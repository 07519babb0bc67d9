"""Blocks reserved ahead of the active segment's end (`file_ops.reserve_ahead`): the file's size never shows them,
recovery never sees them, and roll and close give them back."""

from __future__ import annotations

import os
from pathlib import Path

from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.storage.file_ops import RESERVE_MAX

from .logkit import FakeClock, append, make_batch


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_appends_reserve_ahead_without_changing_the_size_and_close_gives_it_back(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), clock=FakeClock(), fsync=False)
    for n in range(40):
        append(log, make_batch(4, value_size=1000, tag=n))
    path = tmp_path / "t-0" / f"{0:020d}.log"
    size = os.stat(path).st_size
    assert size == log.size_bytes  # the reservation is invisible to readers and to recovery
    assert size < _allocated(path) <= size + RESERVE_MAX + 65536  # ext4/xfs; where unsupported, nothing is reserved
    log.close()
    assert _allocated(path) < size + 65536
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig(), clock=FakeClock(), fsync=False)
    assert reopened.log_end_offset == 160
    reopened.close()


def test_a_roll_gives_back_the_rolled_segments_reservation(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=64 * 1024), clock=FakeClock(), fsync=False)
    for n in range(40):
        append(log, make_batch(4, value_size=1000, tag=n))
    first = tmp_path / "t-0" / f"{0:020d}.log"
    assert _allocated(first) < os.stat(first).st_size + 65536
    log.truncate_to(log.log_end_offset - 4)  # a cut frees the reservation too; appends reserve again
    append(log, make_batch(4, value_size=1000, tag=99))
    log.close()
