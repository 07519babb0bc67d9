"""`read_file_records`: ranges of segment files handed out for sendfile keep the bytes they promised.

Whatever happens to the log between the read and the send (retention, DeleteRecords, a cleaning's swap, a
truncation followed by other appends), the range still yields exactly the bytes `read` returned at that moment.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

from kafkalite.protocol.records import read_header
from kafkalite.storage import FileRecords, LogConfig, MemoryLog, PartitionLog
from kafkalite.storage.file_records import ZERO_COPY_MIN_BYTES

from .compaction_kit import clean, put
from .logkit import FakeClock, append, make_batch

BIG = 4 * ZERO_COPY_MIN_BYTES  # a segment size that holds a few zero-copy ranges


def _file_log(tmp_path: Path, clock: FakeClock, **config: object) -> PartitionLog:
    settings = LogConfig(segment_bytes=BIG, index_interval_bytes=4096, **config)  # type: ignore[arg-type]
    return PartitionLog.open(tmp_path / "t-0", settings, clock=clock, fsync=False)


def _fill(log: PartitionLog, batches: int, *, tag: int = 0) -> None:
    for n in range(batches):
        append(log, make_batch(4, value_size=2000, tag=tag + n))  # about 8 KiB each


def _sent(records: FileRecords) -> bytes:
    """What a sender would send from now on: the preserved rest, or the file range (as `sendfile` reads it)."""
    return records.unsent_bytes()


def test_a_large_read_is_a_range_of_the_file_with_the_bytes_read_returns(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 12)
    records = log.read_file_records(0, 1 << 20)
    assert isinstance(records, FileRecords)
    assert _sent(records) == log.read(0, 1 << 20)
    records.close()
    assert records.closed
    log.close()


def test_limits_end_on_whole_batches_and_small_reads_are_bytes(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 12)
    for offset in (0, 4, 9, 20):
        for max_bytes in (1, 1000, ZERO_COPY_MIN_BYTES + 5, 3 * ZERO_COPY_MIN_BYTES - 7, 1 << 20):
            read = log.read_file_records(offset, max_bytes)
            expected = log.read(offset, max_bytes)
            if isinstance(read, FileRecords):
                assert len(expected) >= ZERO_COPY_MIN_BYTES
                assert _sent(read) == expected
                read.close()
            else:
                assert read == expected
                assert len(read) < ZERO_COPY_MIN_BYTES
    assert log.read_file_records(log.log_end_offset, 1 << 20) == b""
    log.close()


def test_the_memory_engine_answers_bytes() -> None:
    log = MemoryLog(LogConfig(), clock=FakeClock())
    for n in range(12):
        append(log, make_batch(4, value_size=2000, tag=n))
    assert log.read_file_records(0, 1 << 20) == log.read(0, 1 << 20)


def test_retention_deletes_the_segment_under_a_range_and_the_range_still_reads(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _file_log(tmp_path, clock, retention_ms=1)
    _fill(log, 30)  # several segments
    expected = log.read(0, 1 << 20)
    records = log.read_file_records(0, 1 << 20)
    assert isinstance(records, FileRecords)
    first_segment = tmp_path / "t-0" / f"{0:020d}.log"
    clock.now_ms += 10_000_000
    assert log.apply_retention(clock.now_ms) > 0
    assert not first_segment.exists()
    assert _sent(records) == expected  # the unlinked inode stays readable through our descriptor
    records.close()
    log.close()


def test_delete_records_removes_the_segment_under_a_range(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 30)
    expected = log.read(0, 1 << 20)
    records = log.read_file_records(0, 1 << 20)
    assert isinstance(records, FileRecords)
    log.delete_records_before(log.log_end_offset - 1)
    assert _sent(records) == expected
    records.close()
    log.close()


def test_truncation_and_new_appends_never_change_the_bytes_of_a_range(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 3)
    expected = log.read(0, 1 << 20)
    records = log.read_file_records(0, 1 << 20)
    assert isinstance(records, FileRecords)
    records.advance(1000)  # a sender got this far when the cut came
    log.truncate_to(4)  # the second batch starts at offset 4
    _fill(log, 3, tag=100)  # other batches now sit where the promised ones were
    assert log.read(0, 1 << 20) != expected
    assert records.preserved is not None
    assert _sent(records) == expected[1000:]
    records.advance(len(records.preserved))
    assert records.sent == records.size
    records.close()
    log.close()


def test_a_range_before_the_cut_is_left_alone(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 6)
    records = log.read_file_records(0, 3 * 8200)
    assert isinstance(records, FileRecords)
    end_offset = 4 * (len(log.read(0, records.size)) // 8000)
    log.truncate_to(end_offset + 4)
    assert records.preserved is None  # nothing it covers was cut: still sent from the file
    records.close()
    log.close()


def test_a_cleaning_swap_under_a_range_keeps_its_bytes(tmp_path: Path) -> None:
    clock = FakeClock()
    config = LogConfig(
        segment_bytes=BIG, compact=True, delete=False, min_cleanable_dirty_ratio=0.0, index_interval_bytes=4096
    )
    log = PartitionLog.open(tmp_path / "c-0", config, clock=clock, fsync=False)
    for n in range(40):
        put(log, [(b"k%d" % (i % 3), bytes([n]) * 2000) for i in range(4)])
    expected = log.read(0, 1 << 20)
    records = log.read_file_records(0, 1 << 20)
    assert isinstance(records, FileRecords)
    assert clean(log, clock.now_ms + 10_000)
    assert log.read(log.log_start_offset, 1 << 20) != expected  # the first segment was rewritten
    assert _sent(records) == expected
    records.close()
    log.close()


def test_a_dropped_range_closes_its_descriptor(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 12)
    records = log.read_file_records(0, 1 << 20)
    assert isinstance(records, FileRecords)
    fd = records.fd
    os.fstat(fd)
    del records
    gc.collect()
    try:
        os.fstat(fd)
    except OSError:
        pass
    else:  # the number may have been reused by another open: then it is not ours any more
        assert not os.path.samefile(f"/proc/self/fd/{fd}", tmp_path / "t-0" / f"{0:020d}.log")
    log.close()


def test_headers_of_a_range_match_the_log(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 5)
    records = log.read_file_records(4, 1 << 20)
    assert isinstance(records, FileRecords)
    data = _sent(records)
    assert read_header(data).base_offset == 4
    records.close()
    log.close()


def test_a_cut_inside_bytes_already_passed_to_sendfile_moves_the_segment_to_a_copy(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 3)
    expected = log.read(0, 1 << 20)
    records = log.read_file_records(0, 1 << 20)
    assert isinstance(records, FileRecords)
    records.advance(len(expected) - 10)  # nearly all of it is queued in a socket by reference
    log_path = tmp_path / "t-0" / f"{0:020d}.log"
    log.truncate_to(4)
    _fill(log, 3, tag=100)
    assert records.preserved is None
    assert os.stat(log_path).st_ino != os.fstat(records.fd).st_ino  # the old file is never written again
    assert os.pread(records.fd, len(expected), 0) == expected
    assert log.read(0, 1 << 20)[: len(expected) // 3] == expected[: len(expected) // 3]  # the kept batch
    records.close()
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=BIG), fsync=False)
    assert reopened.log_end_offset == 16
    reopened.close()


def test_open_removes_a_copy_a_crash_left_aside(tmp_path: Path) -> None:
    log = _file_log(tmp_path, FakeClock())
    _fill(log, 3)
    log.close()
    leftover = tmp_path / "t-0" / f"{0:020d}.log.truncated"
    leftover.write_bytes(b"half a copy")
    reopened = _file_log(tmp_path, FakeClock())
    assert not leftover.exists()
    assert reopened.log_end_offset == 12
    reopened.close()
