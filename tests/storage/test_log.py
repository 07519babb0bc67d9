"""One behaviour suite for every log engine (the `engine` fixture runs each test on the memory and the file log)."""

from __future__ import annotations

import random

import pytest

from kafkalite.errors import OffsetOutOfRangeError
from kafkalite.protocol.records import iter_records, read_batches
from kafkalite.storage import Log, LogConfig

from .logkit import FakeClock, LogFactory, append, make_batch

SMALL_SEGMENTS = LogConfig(segment_bytes=1_000, index_interval_bytes=200)


def read_all(log: Log, offset: int | None = None, max_bytes: int = 1 << 20) -> list[tuple[int, int]]:
    """(base, last) of every batch from `offset` (default: log start) to the log end, via repeated reads."""
    offset = log.log_start_offset if offset is None else offset
    found: list[tuple[int, int]] = []
    while offset < log.log_end_offset:
        chunk = log.read(offset, max_bytes)
        assert chunk, f"empty read at {offset} below the log end {log.log_end_offset}"
        for _, header in read_batches(chunk):
            found.append((header.base_offset, header.last_offset))
        offset = found[-1][1] + 1
    return found


def fill(
    log: Log, batches: int, *, records: int = 3, timestamp: int = 1_000, value_size: int = 10
) -> list[tuple[int, int]]:
    return [
        append(log, make_batch(records, timestamp=timestamp + i * records, value_size=value_size, tag=i))
        for i in range(batches)
    ]


def test_append_assigns_consecutive_offsets(make_log: LogFactory) -> None:
    log = make_log()
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    assert append(log, make_batch(3)) == (0, 2)
    assert append(log, make_batch(1)) == (3, 3)
    assert append(log, make_batch(5)) == (4, 8)
    assert log.log_end_offset == 9


def test_read_returns_batches_as_appended_with_patched_base_offset(make_log: LogFactory) -> None:
    log = make_log()
    originals = [bytes(make_batch(2, tag=i)) for i in range(5)]
    for original in originals:
        append(log, bytearray(original))
    stored = log.read(0, 1 << 20)
    assert log.size_bytes == len(stored) == sum(len(o) for o in originals)
    for (position, header), original, base in zip(read_batches(stored), originals, range(0, 10, 2), strict=True):
        assert header.base_offset == base
        assert stored[position + 8 : position + header.size] == original[8:]


@pytest.mark.parametrize("form", [bytes, bytearray, memoryview])
def test_append_leaves_the_callers_bytes_as_they_are(make_log: LogFactory, form: type) -> None:
    """The request's bytes go to the log without a copy to patch: the new base offset is the log's own."""
    log = make_log()
    append(log, make_batch(4))
    originals = [bytes(make_batch(2, tag=i)) for i in range(3)]
    handed_in = [form(bytearray(original) if form is memoryview else original) for original in originals]
    for batch in handed_in:
        append(log, batch)
    assert [bytes(batch) for batch in handed_in] == originals  # base offset 0 in each, still
    stored = log.read(4, 1 << 20)
    assert [header.base_offset for _, header in read_batches(stored)] == [4, 6, 8]
    assert [r.offset for position, _ in read_batches(stored) for r in iter_records(stored, position)] == list(
        range(4, 10)
    )


def test_read_from_every_offset_starts_at_the_batch_holding_it(make_log: LogFactory) -> None:
    log = make_log(SMALL_SEGMENTS)
    appended = fill(log, 40)
    for offset in range(log.log_end_offset):
        first = read_batches(log.read(offset, 1))[0][1]
        assert first.base_offset <= offset <= first.last_offset
    assert read_all(log) == appended


def test_read_at_least_one_batch_and_never_more_than_max_bytes(make_log: LogFactory) -> None:
    log = make_log()
    fill(log, 10, value_size=100)
    one_batch = len(log.read(0, 1))
    assert len(read_batches(log.read(0, 1))) == 1
    assert len(read_batches(log.read(0, one_batch * 3))) == 3
    assert len(read_batches(log.read(0, one_batch * 3 - 1))) == 2


def test_read_at_log_end_is_empty_and_beyond_is_out_of_range(make_log: LogFactory) -> None:
    log = make_log()
    assert log.read(0, 100) == b""
    fill(log, 2)
    assert log.read(log.log_end_offset, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(log.log_end_offset + 1, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_read_below_log_start_is_out_of_range(make_log: LogFactory) -> None:
    log = make_log()
    fill(log, 4)
    log.delete_records_before(5)
    assert log.log_start_offset == 5
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100)
    first = read_batches(log.read(5, 1))[0][1]
    assert (first.base_offset, first.last_offset) == (3, 5)


def test_rolls_by_bytes_and_reads_across_segments(make_log: LogFactory) -> None:
    log = make_log(SMALL_SEGMENTS)
    appended = fill(log, 50)
    assert log.size_bytes > 4 * SMALL_SEGMENTS.segment_bytes
    assert read_all(log) == appended
    assert read_all(log, max_bytes=1) == appended


def test_rolls_by_time_using_batch_timestamps(make_log: LogFactory) -> None:
    log = make_log(LogConfig(segment_ms=100, retention_ms=1_000))
    append(log, make_batch(1, timestamp=1_000))
    append(log, make_batch(1, timestamp=1_100))  # exactly segment_ms later: same segment
    append(log, make_batch(1, timestamp=1_101))  # past segment_ms: new segment
    append(log, make_batch(1, timestamp=1_150))
    assert read_all(log) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    # Retention sees two segments: the old one (largest timestamp 1_100) expires, the active one never does.
    assert log.apply_retention(now_ms=2_101) == 1
    assert log.log_start_offset == 2
    assert log.apply_retention(now_ms=10_000) == 0
    assert read_all(log) == [(2, 2), (3, 3)]


def test_rolls_by_clock_when_batches_have_no_timestamp(make_log: LogFactory, clock: FakeClock) -> None:
    log = make_log(LogConfig(segment_ms=100))
    append(log, make_batch(1, timestamp=-1))
    clock.now_ms += 101
    append(log, make_batch(1, timestamp=-1))
    log.delete_records_before(1)  # drops whole segments below 1: only possible if the second batch rolled
    assert log.size_bytes == len(log.read(1, 1 << 20))


def test_retention_by_bytes_deletes_oldest_whole_segments(make_log: LogFactory) -> None:
    log = make_log(SMALL_SEGMENTS)
    fill(log, 50)
    total = log.size_bytes
    assert log.apply_retention(now_ms=0) == 0  # defaults: retention by time only, nothing is old at t=0
    log.config = LogConfig(segment_bytes=1_000, index_interval_bytes=200, retention_bytes=2_500, retention_ms=-1)
    deleted = log.apply_retention(now_ms=0)
    assert deleted > 0
    assert 2_500 <= log.size_bytes < total
    assert log.log_start_offset > 0
    assert read_all(log)[0][0] == log.log_start_offset
    assert read_all(log)[-1][1] == log.log_end_offset - 1


def test_retention_never_deletes_the_active_segment(make_log: LogFactory) -> None:
    log = make_log(LogConfig(retention_bytes=0, retention_ms=0))
    fill(log, 3)
    assert log.apply_retention(now_ms=10**13) == 0
    assert len(read_all(log)) == 3


def test_offset_for_timestamp_finds_first_record_at_or_after(make_log: LogFactory) -> None:
    log = make_log(SMALL_SEGMENTS)
    fill(log, 30, records=3, timestamp=1_000)  # record at offset n has timestamp 1_000 + n
    for target in (0, 999, 1_000, 1_001, 1_045, 1_089):
        expected = max(target - 1_000, 0)
        assert log.offset_for_timestamp(target) == (expected, 1_000 + expected)
    assert log.offset_for_timestamp(1_090) is None


def test_offset_for_timestamp_with_out_of_order_timestamps(make_log: LogFactory) -> None:
    log = make_log(LogConfig(index_interval_bytes=1))
    for ts in (50, 10, 40, 30, 90, 20):
        append(log, make_batch(1, timestamp=ts))
    assert log.offset_for_timestamp(35) == (0, 50)
    assert log.offset_for_timestamp(60) == (4, 90)
    log.delete_records_before(1)
    assert log.offset_for_timestamp(35) == (2, 40)
    assert log.offset_for_timestamp(15) == (2, 40)


def test_offset_for_timestamp_respects_log_start_inside_a_batch(make_log: LogFactory) -> None:
    log = make_log()
    append(log, make_batch(5, timestamp=100))
    log.delete_records_before(3)
    assert log.offset_for_timestamp(0) == (3, 103)


def test_truncate_to_drops_the_tail(make_log: LogFactory) -> None:
    log = make_log(SMALL_SEGMENTS)
    appended = fill(log, 40)
    cut = appended[17][0]
    log.truncate_to(cut)
    assert log.log_end_offset == cut
    assert read_all(log) == appended[:17]
    assert append(log, make_batch(2)) == (cut, cut + 1)
    assert read_all(log) == [*appended[:17], (cut, cut + 1)]
    assert log.offset_for_timestamp(10**9) is None


def test_truncate_to_a_segment_start_and_to_zero(make_log: LogFactory) -> None:
    log = make_log(SMALL_SEGMENTS)
    appended = fill(log, 40)
    for base, _ in reversed(appended):
        if random.random() < 0.3:
            log.truncate_to(base)
            assert log.log_end_offset == base
            assert read_all(log) == appended[: appended.index((base, base + 2))]
    log.truncate_to(0)
    assert (log.log_end_offset, log.size_bytes, log.read(0, 100)) == (0, 0, b"")
    assert fill(log, 2) == [(0, 2), (3, 5)]


def test_truncate_to_inside_a_batch_is_refused(make_log: LogFactory) -> None:
    log = make_log()
    fill(log, 3)
    with pytest.raises(ValueError, match="batch boundary"):
        log.truncate_to(4)
    assert log.log_end_offset == 9
    log.truncate_to(100)
    assert log.log_end_offset == 9


def test_delete_records_before_moves_log_start_and_drops_whole_segments(make_log: LogFactory) -> None:
    log = make_log(SMALL_SEGMENTS)
    appended = fill(log, 40)
    total = log.size_bytes
    log.delete_records_before(61)
    assert log.log_start_offset == 61
    assert log.size_bytes < total
    assert read_all(log)[0] == (60, 62)
    log.delete_records_before(10)  # never moves backwards
    assert log.log_start_offset == 61
    log.delete_records_before(log.log_end_offset)
    assert log.read(log.log_end_offset, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(log.log_end_offset + 1)
    assert append(log, make_batch(1)) == (appended[-1][1] + 1, appended[-1][1] + 1)


async def test_sync_is_awaitable_and_concurrent_calls_all_return(make_log: LogFactory) -> None:
    import asyncio

    log = make_log()
    fill(log, 3)
    await asyncio.gather(*(log.sync() for _ in range(10)))
    assert read_all(log) == [(0, 2), (3, 5), (6, 8)]


def test_records_read_back_decode(make_log: LogFactory) -> None:
    log = make_log()
    append(log, make_batch(4, timestamp=500, value_size=3, tag=7))
    records = list(iter_records(log.read(0, 1 << 20)))
    assert [(r.offset, r.timestamp, r.value) for r in records] == [(i, 500 + i, bytes([7 + i]) * 3) for i in range(4)]
