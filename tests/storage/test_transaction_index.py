"""The aborted-transaction index (`.txnindex`): Kafka's 34-byte entries, per segment, through truncation, retention,
DeleteRecords and reopening; the same rules on both engines."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafkalite.storage import AbortedTxn, LogConfig, PartitionLog
from kafkalite.storage.file_ops import FileOps
from kafkalite.storage.transaction_index import ENTRY_SIZE, TransactionIndex, decode_entries

from .logkit import FakeClock, LogFactory, RecordingOps, append, make_batch


def test_entry_is_kafkas_34_byte_layout() -> None:
    entry = AbortedTxn(producer_id=7, first_offset=10, last_offset=20, last_stable_offset=21)
    encoded = entry.encode()
    assert len(encoded) == ENTRY_SIZE == 34
    assert encoded == struct.pack(">hqqqq", 0, 7, 10, 20, 21)
    assert decode_entries(encoded + encoded[:10]) == [entry]  # a torn tail is ignored


def test_unknown_entry_version_is_refused() -> None:
    with pytest.raises(ValueError, match="version 3"):
        decode_entries(struct.pack(">hqqqq", 3, 1, 2, 3, 4))


def test_aborted_transactions_overlapping_a_range(make_log: LogFactory) -> None:
    log = make_log()
    for _ in range(10):
        append(log, make_batch(1))
    log.append_aborted_transaction(AbortedTxn(1, 0, 3, 4))
    log.append_aborted_transaction(AbortedTxn(2, 2, 6, 7))
    log.append_aborted_transaction(AbortedTxn(3, 8, 9, 10))
    assert [e.producer_id for e in log.aborted_transactions(0, 10)] == [1, 2, 3]
    assert [e.producer_id for e in log.aborted_transactions(4, 8)] == [2]
    assert [e.producer_id for e in log.aborted_transactions(3, 3)] == [1, 2]
    assert log.aborted_transactions(10, 20) == []
    assert log.has_aborted_transaction(6)
    assert not log.has_aborted_transaction(5)


def test_markers_must_come_in_offset_order(make_log: LogFactory) -> None:
    log = make_log()
    append(log, make_batch(5))
    log.append_aborted_transaction(AbortedTxn(1, 0, 3, 4))
    with pytest.raises(ValueError, match="not after"):
        log.append_aborted_transaction(AbortedTxn(2, 0, 3, 4))


def test_truncation_drops_entries_at_and_after_the_cut(make_log: LogFactory) -> None:
    log = make_log(LogConfig(segment_bytes=300))  # two batches per segment: markers at 2 and 5 share none
    for _ in range(3):
        append(log, make_batch(1, value_size=60))
    log.append_aborted_transaction(AbortedTxn(1, 0, 2, 3))  # each entry right after its marker, as the broker does
    for _ in range(3):
        append(log, make_batch(1, value_size=60))
    log.append_aborted_transaction(AbortedTxn(2, 3, 5, 6))
    append(log, make_batch(1, value_size=60))
    log.truncate_to(5)
    assert [e.producer_id for e in log.aborted_transactions(0, 100)] == [1]
    log.truncate_to(0)
    assert log.aborted_transactions(0, 100) == []


def test_retention_and_delete_records_take_entries_with_their_segment(make_log: LogFactory) -> None:
    log = make_log(LogConfig(segment_bytes=200, retention_bytes=1))
    append(log, make_batch(1, value_size=150))
    log.append_aborted_transaction(AbortedTxn(1, 0, 0, 1))
    append(log, make_batch(1, value_size=150))  # rolls: the entry above stays with segment 0
    log.append_aborted_transaction(AbortedTxn(2, 1, 1, 2))
    append(log, make_batch(1, value_size=150))
    assert len(log.aborted_transactions(0, 10)) == 2
    log.delete_records_before(1)  # inside the kept segments: entries below the start are not answered
    assert [e.producer_id for e in log.aborted_transactions(0, 10)] == [2]
    log.apply_retention(0)
    assert log.log_start_offset == 2
    assert log.aborted_transactions(0, 10) == []


def test_file_engine_writes_one_file_per_segment_and_reloads_it(tmp_path: Path) -> None:
    clock = FakeClock()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, LogConfig(segment_bytes=200), clock=clock)
    append(log, make_batch(1, value_size=150))
    log.append_aborted_transaction(AbortedTxn(1, 0, 0, 1))
    append(log, make_batch(1, value_size=150))
    log.append_aborted_transaction(AbortedTxn(2, 1, 1, 2))
    files = sorted(p.name for p in directory.glob("*.txnindex"))
    assert files == ["00000000000000000000.txnindex", "00000000000000000001.txnindex"]
    assert (directory / files[1]).read_bytes() == AbortedTxn(2, 1, 1, 2).encode()
    log.close()
    reopened = PartitionLog.open(directory, LogConfig(segment_bytes=200), clock=clock)
    try:
        assert [e.producer_id for e in reopened.aborted_transactions(0, 10)] == [1, 2]
    finally:
        reopened.close()


def test_load_drops_entries_past_the_log_end_and_orphan_files(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    directory.mkdir()
    (directory / "00000000000000000000.txnindex").write_bytes(
        AbortedTxn(1, 0, 2, 3).encode() + AbortedTxn(2, 3, 9, 10).encode() + b"\x00\x00torn"
    )
    (directory / "00000000000000000050.txnindex").write_bytes(AbortedTxn(3, 50, 51, 52).encode())
    index = TransactionIndex.load(directory, [0], log_end=5, ops=FileOps())
    assert [e.producer_id for e in index.aborted_transactions(0, 100)] == [1]
    assert (directory / "00000000000000000000.txnindex").read_bytes() == AbortedTxn(1, 0, 2, 3).encode()
    assert not (directory / "00000000000000000050.txnindex").exists()


def test_a_cleanings_regroup_writes_the_merged_file_durably_before_removing_the_old_ones(tmp_path: Path) -> None:
    """Segments 0 and 50 merged into 0: the entry of 50 moves to 0's file. The new file is written (and, on a log
    that fsyncs, fsynced with its directory) before 50's file goes, so no crash point loses the entry."""
    directory = tmp_path / "t-0"
    directory.mkdir()
    (directory / "00000000000000000000.txnindex").write_bytes(AbortedTxn(1, 0, 2, 3).encode())
    (directory / "00000000000000000050.txnindex").write_bytes(AbortedTxn(2, 50, 51, 52).encode())
    ops = RecordingOps()
    index = TransactionIndex.load(directory, [0, 50], log_end=60, ops=ops)
    assert ops.calls == []

    index.regroup([0], fsync=True)

    merged, old = "00000000000000000000.txnindex", "00000000000000000050.txnindex"
    assert ops.calls == [
        ("fsync", merged + ".tmp"),
        ("rename", merged),
        ("fsync_directory", "t-0"),
        ("remove", old),
    ]
    assert decode_entries((directory / merged).read_bytes()) == [AbortedTxn(1, 0, 2, 3), AbortedTxn(2, 50, 51, 52)]
    assert not (directory / old).exists()


def test_regroup_without_fsync_still_writes_before_it_removes(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    directory.mkdir()
    (directory / "00000000000000000000.txnindex").write_bytes(AbortedTxn(1, 0, 2, 3).encode())
    (directory / "00000000000000000050.txnindex").write_bytes(AbortedTxn(2, 50, 51, 52).encode())
    ops = RecordingOps()
    TransactionIndex.load(directory, [0, 50], log_end=60, ops=ops).regroup([0])
    assert ops.calls == [("rename", "00000000000000000000.txnindex"), ("remove", "00000000000000000050.txnindex")]


def test_load_after_a_crash_inside_a_regroup_keeps_each_entry_once(tmp_path: Path) -> None:
    """The merged file was written, the old one not yet removed: both hold the entry of 50; it is indexed once."""
    directory = tmp_path / "t-0"
    directory.mkdir()
    both = AbortedTxn(1, 0, 2, 3).encode() + AbortedTxn(2, 50, 51, 52).encode()
    (directory / "00000000000000000000.txnindex").write_bytes(both)
    (directory / "00000000000000000050.txnindex").write_bytes(AbortedTxn(2, 50, 51, 52).encode())
    index = TransactionIndex.load(directory, [0], log_end=60, ops=FileOps())
    assert index.aborted_transactions(0, 100) == [AbortedTxn(1, 0, 2, 3), AbortedTxn(2, 50, 51, 52)]
    assert (directory / "00000000000000000000.txnindex").read_bytes() == both
    assert not (directory / "00000000000000000050.txnindex").exists()
