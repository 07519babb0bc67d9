"""The log cleaner on both engines: what survives a cleaning, the batches it writes, and when it may run."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.errors import StorageError
from kafkalite.protocol.batch_rewrite import ATTR_DELETE_HORIZON, delete_horizon
from kafkalite.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    Compression,
    RecordToWrite,
    build_batch,
    iter_records,
    read_batches,
    read_header,
)
from kafkalite.storage import AbortedTxn, Log, LogConfig, PartitionLog
from kafkalite.storage.compaction_policy import dirtiest, is_due
from kafkalite.storage.compactor import MIN_SHARE, CleaningContext, Throttle

from .compaction_kit import COMPACTED, clean, latest_per_key, open_log, put, read_all, records_of
from .logkit import FakeClock, RecordingOps

ENGINES = ["memory", "file"]
_dirs = itertools.count()


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def fill(log: Log, keys: int, rounds: int, value_size: int = 40) -> dict[bytes, bytes | None]:
    """`rounds` writes of every key (one record per batch), newest values last; returns the latest per key."""
    latest: dict[bytes, bytes | None] = {}
    for round_ in range(rounds):
        for key in range(keys):
            value = b"%d-%d" % (key, round_) + b"x" * value_size
            put(log, [(b"k%d" % key, value)])
            latest[b"k%d" % key] = value
    return latest


def test_cleaning_keeps_the_latest_record_per_key_with_offsets_unchanged(
    engine: str, tmp_path: Path, clock: FakeClock
) -> None:
    log = open_log(engine, tmp_path / "t-0", clock)
    latest = fill(log, keys=5, rounds=40)
    before = {record.offset: record for record in records_of(log)}
    size_before = log.size_bytes
    assert clean(log, clock())
    after = records_of(log)
    assert latest_per_key(after) == latest
    assert all(before[record.offset] == record for record in after)  # same offset, same record
    offsets = [record.offset for record in after]
    assert offsets == sorted(set(offsets))
    assert log.size_bytes < size_before / 3
    assert log.log_end_offset == 200
    stats = log.cleaning_stats(clock())
    assert stats is None or stats.dirty_bytes == 0  # nothing left dirty below the active segment
    log.close()


def test_a_read_inside_a_gap_returns_the_next_batch(engine: str, tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(engine, tmp_path / "t-0", clock)
    fill(log, keys=3, rounds=30)
    assert clean(log, clock())
    survivors = [base for base, _ in read_all(log)]
    gap = next(offset for offset in range(log.log_start_offset, log.log_end_offset) if offset not in survivors)
    first = read_batches(log.read(gap, 1))[0][1]
    assert first.base_offset == min(base for base in survivors if base > gap)
    log.close()


def test_tombstones_stay_until_the_delete_horizon_then_go(engine: str, tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(engine, tmp_path / "t-0", clock)
    fill(log, keys=4, rounds=5)
    put(log, [(b"k1", None)])  # a tombstone
    for n in range(30):  # other keys roll segments past the tombstone
        put(log, [(b"other%d" % (n % 2), b"v" * 60)])
    assert clean(log, clock())
    kept = records_of(log)
    assert [r for r in kept if r.key == b"k1"][-1].value is None  # kept, stamped with a horizon
    stamped = [read_header(batch) for _, batch in read_all(log) if any(r.value is None for r in iter_records(batch))]
    assert stamped
    assert all(h.attributes & ATTR_DELETE_HORIZON for h in stamped)
    assert {delete_horizon(h) for h in stamped} == {clock() + COMPACTED.delete_retention_ms}
    clock.now_ms += COMPACTED.delete_retention_ms - 1
    clean(log, clock())
    assert [r for r in records_of(log) if r.key == b"k1"][-1].value is None  # not yet
    clock.now_ms += 1
    stats = log.cleaning_stats(clock())
    assert stats is not None
    assert stats.horizon_due  # the horizon alone makes the log due
    assert clean(log, clock())
    assert b"k1" not in latest_per_key(records_of(log))
    log.close()


def test_a_rebuilt_batch_keeps_its_identity_and_codec(engine: str, tmp_path: Path, clock: FakeClock) -> None:
    log = open_log(engine, tmp_path / "t-0", clock)
    items: list[tuple[bytes | None, bytes | None]] = [(b"a", b"1" * 50), (b"b", b"2" * 50), (b"c", b"3" * 50)]
    put(log, items, compression=Compression.ZSTD, producer=(7, 2, 100))
    for n in range(20):
        put(log, [(b"b", b"new%d" % n + b"y" * 50)])
    assert clean(log, clock())
    first = read_all(log)[0][1]
    header = read_header(first)
    read_batches(first)  # the CRC is right
    assert (header.base_offset, header.last_offset_delta) == (0, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 100)
    assert header.compression == Compression.ZSTD
    assert [(r.offset, r.key) for r in iter_records(first)] == [(0, b"a"), (2, b"c")]
    assert [r.timestamp for r in iter_records(first)] == [1_000, 1_002]
    log.close()


def test_a_producers_last_batch_is_kept_empty_and_keyless_records_go(
    engine: str, tmp_path: Path, clock: FakeClock
) -> None:
    log = open_log(engine, tmp_path / "t-0", clock)
    put(log, [(b"a", b"old")], producer=(9, 0, 0))
    put(log, [(None, b"keyless")])
    put(log, [(b"z", b"old")], producer=(10, 0, 0))
    for n in range(30):
        put(log, [(b"a" if n % 2 else b"z", b"new" * 30)])
    context = CleaningContext(producer_last_offsets={9: 0})  # producer 9's last batch is at offset 0; 10 is gone
    assert clean(log, clock(), context)
    batches = read_all(log)
    empty = read_header(batches[0][1])
    assert (empty.base_offset, empty.record_count, empty.producer_id, empty.base_sequence) == (0, 0, 9, 0)
    assert 1 not in [base for base, _ in batches]  # the keyless record
    assert 2 not in [base for base, _ in batches]  # producer 10's superseded batch
    assert None not in [r.key for r in records_of(log)]
    log.close()


def test_min_compaction_lag_keeps_young_segments_dirty(engine: str, tmp_path: Path, clock: FakeClock) -> None:
    config = replace(COMPACTED, min_compaction_lag_ms=10_000)
    log = open_log(engine, tmp_path / "t-0", clock, config)
    for n in range(40):
        put(log, [(b"k", b"v" * 60)], timestamp=clock() - 20_000 + n * 1000)
    stats = log.cleaning_stats(clock())
    assert stats is not None
    cleaned_up_to = stats.first_uncleanable
    assert 0 < cleaned_up_to < log.log_end_offset
    assert clean(log, clock())
    young = [r for r in records_of(log) if r.offset >= cleaned_up_to]
    assert len(young) == log.log_end_offset - cleaned_up_to  # untouched
    log.close()


def test_policy_picks_the_dirtiest_due_log_and_honours_the_ratio(tmp_path: Path, clock: FakeClock) -> None:
    lazy = replace(COMPACTED, min_cleanable_dirty_ratio=0.99)
    a, b = (open_log("memory", tmp_path, clock, config) for config in (COMPACTED, lazy))
    fill(a, keys=5, rounds=10)
    fill(b, keys=5, rounds=20)
    assert clean(a, clock())
    fill(a, keys=5, rounds=2)
    stats_a, stats_b = a.cleaning_stats(clock()), b.cleaning_stats(clock())
    assert stats_a is not None
    assert stats_b is not None
    assert stats_b.dirty_ratio == 1.0 > stats_a.dirty_ratio > 0
    assert is_due(lazy, stats_b)
    assert dirtiest([("a", COMPACTED, stats_a), ("b", lazy, stats_b)]) == ("b", stats_b)
    stale = replace(lazy, min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=1)
    a.config = stale
    stats = a.cleaning_stats(clock() + 10**9)
    assert stats is not None
    assert stats.must_clean  # max.compaction.lag.ms passed: due whatever the ratio
    assert is_due(stale, stats)


def test_retention_between_prepare_and_finish_discards_the_cleaning(
    engine: str, tmp_path: Path, clock: FakeClock
) -> None:
    log = open_log(engine, tmp_path / "t-0", clock, replace(COMPACTED, delete=True, retention_ms=1))
    fill(log, keys=3, rounds=20)
    job = log.prepare_cleaning(clock(), CleaningContext())
    assert job is not None
    job.run(Throttle(None), lambda: False)
    assert log.apply_retention(clock() + 10**9) > 0
    assert not log.finish_cleaning(job)
    if isinstance(log, PartitionLog):
        assert not list(log.directory.glob("*.cleaned"))
        assert not list(log.directory.glob("*.swap"))
    log.close()


def test_a_cleaned_file_log_reopens_with_its_gaps(tmp_path: Path, clock: FakeClock) -> None:
    directory = tmp_path / "t-0"
    log = open_log("file", directory, clock)
    latest = fill(log, keys=4, rounds=30)
    assert clean(log, clock())
    end = log.log_end_offset
    log.close()
    (directory / "clean-shutdown").unlink()  # an unclean open rebuilds and checks what it must
    for segment in directory.glob("*.index"):
        segment.unlink()  # and every index is rebuilt from a log with gaps
    log = PartitionLog.open(directory, COMPACTED, clock=clock, fsync=False)
    assert log.log_end_offset == end
    assert latest_per_key(records_of(log)) == latest
    log.close()


# --- the property: cleaning against a reference model ---------------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 7), st.binary(min_size=0, max_size=80)),
        st.tuples(st.just("delete"), st.integers(0, 7), st.just(b"")),
        st.tuples(st.just("clean"), st.just(0), st.just(b"")),
        st.tuples(st.just("wait"), st.integers(0, 1500), st.just(b"")),
    ),
    min_size=1,
    max_size=120,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations, engine=st.sampled_from(ENGINES))
def test_cleaning_agrees_with_a_reference_model(tmp_path: Path, ops: list[tuple[str, int, bytes]], engine: str) -> None:
    clock = FakeClock()
    config = LogConfig(
        segment_bytes=400,
        index_interval_bytes=64,
        compact=True,
        delete=False,
        min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=1000,
    )
    log = open_log(engine, tmp_path / f"p-{next(_dirs)}", clock, config)
    model: dict[bytes, bytes | None] = {}
    written: dict[int, tuple[bytes, bytes | None]] = {}
    for kind, number, value in ops:
        if kind in ("put", "delete"):
            key = b"k%d" % number
            stored = value if kind == "put" else None
            base, _ = put(log, [(key, stored)], timestamp=clock())
            model[key] = stored
            written[base] = (key, stored)
        elif kind == "clean":
            clean(log, clock())
        else:
            clock.now_ms += number
        records = records_of(log)
        offsets = [record.offset for record in records]
        assert offsets == sorted(set(offsets))  # strictly increasing
        assert all(written[r.offset] == (r.key, r.value) for r in records)  # nothing invented or altered
        seen = latest_per_key(records)
        for key, latest in model.items():  # the latest value of every key; a deleted key may have gone entirely
            assert seen.get(key, None) == latest, key
            if latest is not None:
                assert key in seen
    # Roll everything written so far out of the active segment, then clean past every horizon: no tombstone is left
    # below the active segment, and every live key still reads its latest value.
    for _ in range(12):
        put(log, [(b"filler", b"f" * 60)], timestamp=clock())
    model[b"filler"] = b"f" * 60
    clean(log, clock())
    clock.now_ms += config.delete_retention_ms
    clean(log, clock())
    stats = log.cleaning_stats(clock())
    assert stats is not None
    records = records_of(log)
    assert not [r for r in records if r.value is None and r.offset < stats.first_uncleanable]
    assert {k: v for k, v in latest_per_key(records).items() if v is not None} == {
        k: v for k, v in model.items() if v is not None
    }
    log.close()


def control_batch(producer_id: int, *, commit: bool) -> bytearray:
    """A transaction marker as a broker writes it: key = (version 0, type), value = (version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    batch = bytearray(
        build_batch(
            [RecordToWrite(struct.pack(">hi", 0, 0), key)], now_ms=1_000, producer_id=producer_id, producer_epoch=0
        )
    )
    attributes = struct.unpack_from(">h", batch, 21)[0] | ATTR_CONTROL | ATTR_TRANSACTIONAL
    struct.pack_into(">h", batch, 21, attributes)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return batch


def transactional(items: list[tuple[bytes, bytes]], producer_id: int) -> bytearray:
    batch = bytearray(
        build_batch(
            [RecordToWrite(v, k) for k, v in items],
            now_ms=1_000,
            producer_id=producer_id,
            producer_epoch=0,
            base_sequence=0,
        )
    )
    struct.pack_into(">h", batch, 21, struct.unpack_from(">h", batch, 21)[0] | ATTR_TRANSACTIONAL)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return batch


@dataclass(frozen=True)
class Aborted:
    producer_id: int
    first_offset: int
    last_offset: int


def test_aborted_data_goes_and_markers_outlive_their_data_and_horizon(
    engine: str, tmp_path: Path, clock: FakeClock
) -> None:
    log = open_log(engine, tmp_path / "t-0", clock)
    for batch in (
        transactional([(b"a", b"aborted"), (b"b", b"aborted")], 5),  # 0-1
        control_batch(5, commit=False),  # 2: abort
        transactional([(b"c", b"committed")], 6),  # 3
        control_batch(6, commit=True),  # 4: commit
    ):
        log.append(batch, read_header(batch))
    for n in range(30):
        put(log, [(b"filler%d" % (n % 2), b"f" * 60)])
    context = CleaningContext(aborted=[Aborted(5, 0, 2)])
    assert clean(log, clock(), context)
    bases = {base: read_header(batch) for base, batch in read_all(log)}
    assert 0 not in bases  # the aborted data
    assert bases[2].is_control
    assert bases[4].is_control  # markers stay, stamped with a horizon
    assert delete_horizon(bases[2]) == delete_horizon(bases[4]) == clock() + COMPACTED.delete_retention_ms
    assert [(r.key, r.value) for r in records_of(log) if r.offset == 3] == [(b"c", b"committed")]
    clock.now_ms += COMPACTED.delete_retention_ms
    assert clean(log, clock(), context)
    bases = {base: read_header(batch) for base, batch in read_all(log)}
    assert 2 not in bases  # past its horizon, and its transaction's data is gone
    assert bases[4].is_control  # its transaction's record at 3 is still there
    log.close()


def test_an_abort_marker_cleaned_away_leaves_the_transaction_index(
    engine: str, tmp_path: Path, clock: FakeClock
) -> None:
    """Once the cleaner removes an abort marker (its data gone, its horizon passed), the index entry goes too, as
    Kafka's cleaner indexes only the aborts whose markers it keeps: a read_committed reader told of an abort whose
    marker is gone would drop that producer's later committed batches, waiting for a marker that never comes."""
    log = open_log(engine, tmp_path / "t-0", clock)
    aborts = {1: AbortedTxn(5, 0, 1, 2), 3: AbortedTxn(7, 2, 3, 4)}  # by marker offset, as the broker indexes them
    for offset, batch in enumerate(
        (
            transactional([(b"a", b"aborted")], 5),
            control_batch(5, commit=False),  # 1: abort
            transactional([(b"b", b"aborted")], 7),
            control_batch(7, commit=False),  # 3: abort, the last marker of producer 7: kept
            transactional([(b"c", b"committed")], 5),
            control_batch(5, commit=True),  # 5: commit, the last marker of producer 5
        )
    ):
        log.append(batch, read_header(batch))
        if offset in aborts:
            log.append_aborted_transaction(aborts[offset])
    for n in range(30):
        put(log, [(b"filler%d" % (n % 2), b"f" * 60)])

    def context() -> CleaningContext:
        return CleaningContext(
            aborted=log.aborted_transactions(0, log.log_end_offset), producer_last_offsets={5: 5, 7: 3}
        )

    assert clean(log, clock(), context())
    assert [(e.producer_id, e.last_offset) for e in log.aborted_transactions(0, log.log_end_offset)] == [(5, 1), (7, 3)]
    clock.now_ms += COMPACTED.delete_retention_ms
    assert clean(log, clock(), context())
    bases = {base: read_header(batch) for base, batch in read_all(log)}
    assert 1 not in bases
    assert bases[3].is_control
    assert bases[5].is_control
    assert [(e.producer_id, e.last_offset) for e in log.aborted_transactions(0, log.log_end_offset)] == [(7, 3)]
    log.close()
    if engine == "file":
        reopened = open_log(engine, tmp_path / "t-0", clock)
        assert [(e.producer_id, e.last_offset) for e in reopened.aborted_transactions(0, 100)] == [(7, 3)]
        reopened.close()


def write_aborts_in_two_segments(directory: Path, clock: FakeClock) -> None:
    """A compacted log that fsyncs, with an aborted transaction (indexed in `.txnindex`) in each of its first two
    segments, closed: the recovery point is then its end, so every closed segment is cleanable."""
    log = PartitionLog.open(directory, COMPACTED, clock=clock, fsync=True)
    for producer_id in (5, 7):
        log.append(batch := transactional([(b"a", b"aborted")], producer_id), read_header(batch))
        marker = log.log_end_offset
        log.append(batch := control_batch(producer_id, commit=False), read_header(batch))
        log.append_aborted_transaction(AbortedTxn(producer_id, marker - 1, marker, marker + 1))
        for n in range(15):
            put(log, [(b"filler%d" % (n % 2), b"f" * 60)])
    log.close()


def test_a_cleaning_on_a_log_that_fsyncs_fsyncs_the_transaction_index_it_regroups(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The start-up replay re-indexes aborts only in the log's tail, so the merged `.txnindex` is fsynced (with its
    directory) before the file of the segment that left is removed."""
    directory = tmp_path / "t-0"
    write_aborts_in_two_segments(directory, clock)
    second = sorted(directory.glob("*.txnindex"))[1].name
    ops = RecordingOps()
    merging = replace(COMPACTED, segment_bytes=1 << 20)  # the cleaning groups every closed segment into one
    log = PartitionLog.open(directory, merging, clock=clock, fsync=True, file_ops=ops)
    try:
        aborted = log.aborted_transactions(0, log.log_end_offset)
        assert clean(log, clock(), CleaningContext(aborted=aborted))
        merged = "00000000000000000000.txnindex"
        txn_calls = [call for call in ops.calls if ".txnindex" in call[1] or call[0] == "fsync_directory"]
        fsynced = txn_calls.index(("fsync", merged + ".tmp"))
        assert txn_calls[fsynced + 1 : fsynced + 3] == [("rename", merged), ("fsync_directory", "t-0")]
        assert txn_calls.index(("remove", second)) > fsynced + 2
        assert sorted(p.name for p in directory.glob("*.txnindex")) == [merged]
        assert [e.producer_id for e in log.aborted_transactions(0, log.log_end_offset)] == [5, 7]
    finally:
        log.close()


def test_a_failed_regroup_of_the_transaction_index_stops_writes_and_a_reopen_recovers(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The cleaned segments are swapped in; the merged `.txnindex` cannot be fsynced: the cleaning fails with a
    StorageError (never a raw OSError), the log refuses writes, and reopening finds every abort in the old files."""
    directory = tmp_path / "t-0"
    write_aborts_in_two_segments(directory, clock)
    ops = RecordingOps()
    ops.failing_fsyncs.add("00000000000000000000.txnindex.tmp")
    merging = replace(COMPACTED, segment_bytes=1 << 20)
    log = PartitionLog.open(directory, merging, clock=clock, fsync=True, file_ops=ops)
    aborted = log.aborted_transactions(0, log.log_end_offset)
    with pytest.raises(StorageError, match="regrouping the transaction index"):
        clean(log, clock(), CleaningContext(aborted=aborted))
    with pytest.raises(StorageError, match="refuses writes"):
        put(log, [(b"k", b"v")])
    log.close()
    reopened = PartitionLog.open(directory, merging, clock=clock, fsync=True)
    try:
        assert [e.producer_id for e in reopened.aborted_transactions(0, reopened.log_end_offset)] == [5, 7]
    finally:
        reopened.close()


async def test_a_stopped_log_is_left_alone_by_the_cleaner_and_a_cleaning_it_stopped_under_is_discarded(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A log stops after a failed fsync and refuses writes until a restart recovers it from disk. A cleaning's swap
    writes and fsyncs files too, so a stopped log is not due for cleaning (the cleaner would otherwise pick it again
    after every back-off and fail each time), and a cleaning that ran while it stopped is discarded, not swapped in."""
    directory = tmp_path / "t-0"
    write_aborts_in_two_segments(directory, clock)
    ops = RecordingOps()
    log = PartitionLog.open(directory, COMPACTED, clock=clock, fsync=True, file_ops=ops)
    try:
        aborted = log.aborted_transactions(0, log.log_end_offset)
        job = log.prepare_cleaning(clock(), CleaningContext(aborted=aborted))
        assert job is not None
        job.run(Throttle(None), lambda: False)
        put(log, [(b"k", b"v")])
        ops.failing_fsyncs.add(max(path.name for path in directory.glob("*.log")))  # the active segment
        with pytest.raises(StorageError, match="Input/output error"):
            await log.sync()
        files = sorted(path.name for path in directory.iterdir())
        assert not log.finish_cleaning(job)
        assert sorted(path.name for path in directory.iterdir()) == [
            name for name in files if not name.endswith(".cleaned")
        ]
        assert log.cleaning_stats(clock()) is None
        assert not clean(log, clock(), CleaningContext(aborted=aborted))
    finally:
        log.close()


def test_a_full_offset_map_ends_the_cleaning_early_and_the_next_one_goes_on(
    engine: str, tmp_path: Path, clock: FakeClock
) -> None:
    log = open_log(engine, tmp_path / "t-0", clock)
    latest = fill(log, keys=30, rounds=6)
    first = log.cleaning_stats(clock())
    assert first is not None
    assert clean(log, clock(), CleaningContext(max_keys=10))
    assert 0 < log.first_dirty_offset < first.first_uncleanable  # stopped where the map filled
    while clean(log, clock(), CleaningContext(max_keys=10)):
        stats = log.cleaning_stats(clock())
        assert stats is not None
        if stats.dirty_bytes == 0:
            break
    assert latest_per_key(records_of(log)) == latest
    log.close()


def test_the_throttle_bounds_the_rate() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    throttle = Throttle(1_000_000, clock=lambda: now[0], cpu_clock=lambda: 0.0, sleep=sleep)
    for _ in range(10):
        throttle.consume(500_000)
    assert now[0] == pytest.approx(5.0)  # 5 MB at 1 MB/s
    with pytest.raises(ValueError, match="positive"):
        Throttle(0)


def _run_throttle(reacquire_s: float, steps: int) -> tuple[list[float], float]:
    """A cleaner doing 1 ms of CPU work per batch; each GIL hand-back costs `reacquire_s` of wall time before the
    thread runs again. Returns the sleeps and the cleaner's share of the wall time."""
    wall, cpu = [0.0], [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        wall[0] += seconds + reacquire_s

    throttle = Throttle(None, clock=lambda: wall[0], cpu_clock=lambda: cpu[0], sleep=sleep)
    for _ in range(steps):
        cpu[0] += 0.001
        wall[0] += 0.001
        throttle.consume(100)
    return sleeps, cpu[0] / wall[0]


def test_the_throttle_hands_the_gil_back_after_each_millisecond_of_work() -> None:
    sleeps, share = _run_throttle(reacquire_s=0.0, steps=100)
    assert set(sleeps) == {0}
    assert len(sleeps) >= 95  # all but a window reset
    assert share == pytest.approx(1.0)


def test_a_starved_cleaner_keeps_the_gil_until_it_has_its_share() -> None:
    """A loop that is never idle wins every race for the GIL (20 ms per hand-back here): a cleaner that always
    yielded would get 1 ms in 21; this one keeps its floor and still yields when it has it."""
    sleeps, share = _run_throttle(reacquire_s=0.02, steps=5000)
    assert MIN_SHARE * 0.95 <= share <= MIN_SHARE * 1.5  # its floor, and no more: the loop still goes first
    assert len(sleeps) > 500
