"""The aborted-transaction index: per segment, the transactions whose abort marker landed in it (Kafka's `.txnindex`).

File `<base offset, 20 digits>.txnindex` beside the segment's `.log`, created by the first abort marker written to
that segment (a segment without aborts has no file). Entries are 34 bytes, big-endian, in marker order:

    int16 version (0) · int64 producer_id · int64 first_offset · int64 last_offset · int64 last_stable_offset

`first_offset` is the offset of the aborted transaction's first batch in this partition, `last_offset` the offset of
its abort marker, and `last_stable_offset` the partition's LSO right after the marker was written (the field Kafka's
readers use to stop a scan early; kept for format fidelity).

What readers ask (`aborted_transactions(start, end)`): every aborted transaction whose range overlaps
[start, end): `last_offset >= start and first_offset < end`. A read_committed Fetch returns them with its batches so
the client can drop the aborted records; the log cleaner uses them to drop aborted data.

Invariants: entries are held in memory too (a partition has few aborts), sorted by `last_offset` over all segments;
each file holds exactly the entries of its segment. `truncate_to(offset)` drops every entry whose marker is at or
after `offset` (rewriting the affected files atomically); `drop_segments` removes the files of segments that left the
log (retention, DeleteRecords, truncation); `regroup` follows a cleaning that merged segments (each entry moves to
the file of the segment now holding its marker), and `load` does the same with whatever files it finds, so a crash
between a cleaning's swap and its regroup loses nothing. Entries whose `last_offset` is below the log start are
ignored by readers and leave with their segment. The index is derived from the log: the broker re-adds entries it
finds missing when it replays the log's tail on start (its last `broker.partition.PRODUCER_STATE_WINDOW` offsets),
and `load` drops entries past the recovered log end (a torn last entry is discarded). An entry older than that window
is known only from its file, so on a log that fsyncs, the file an abort was appended to joins the log's next sync
round (`PartitionLog.append_aborted_transaction`), and a regroup fsyncs the files it rewrites, and their directory
once, before it removes those of the segments that left. A truncation writes to the page cache only: what it drops
lies past the log end it leaves.

Concurrency: used from the event loop only, like the log that owns it.
"""

from __future__ import annotations

import logging
import os
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import NamedTuple

from kafkalite.storage.file_ops import FileOps, replace_atomically

logger = logging.getLogger("kafkalite.storage")

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    """One aborted transaction of one partition (see the module docstring for the fields)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return ENTRY.pack(VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """Entries of a `.txnindex` file; a torn tail (fewer than 34 bytes) is ignored, an unknown version is an error."""
    entries = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, producer_id, first, last, lso = ENTRY.unpack_from(data, pos)
        if version != VERSION:
            raise ValueError(f"transaction index entry version {version} at byte {pos} is not supported")
        entries.append(AbortedTxn(producer_id, first, last, lso))
    return entries


def txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}{TXN_INDEX_SUFFIX}"


class TransactionIndex:
    """The aborted transactions of one partition, by segment; files in `directory`, or memory only when None."""

    def __init__(self, directory: Path | None = None, ops: FileOps | None = None) -> None:
        self._directory = directory
        self._ops = ops or FileOps()
        self._by_segment: dict[int, list[AbortedTxn]] = {}
        self._on_disk: dict[int, list[AbortedTxn]] = {}  # what each file holds (file engine only)
        self._entries: list[AbortedTxn] = []  # every segment's, sorted by last_offset
        self._last_offsets: list[int] = []

    @classmethod
    def load(
        cls, directory: Path, segment_bases: Iterable[int], log_end: int, ops: FileOps, *, fsync: bool = False
    ) -> TransactionIndex:
        """Read every `.txnindex` in `directory`; keep the entries whose marker lies in the log (below `log_end`, in
        one of `segment_bases`), each in the file of the segment holding its marker (`regroup`, with `fsync`)."""
        index = cls(directory, ops)
        bases = sorted(segment_bases)
        for path in sorted(directory.glob(f"*{TXN_INDEX_SUFFIX}")):
            stem = path.name[: -len(TXN_INDEX_SUFFIX)]
            try:
                if not stem.isdigit():
                    raise ValueError("not a segment's index")
                entries = decode_entries(path.read_bytes())
            except (OSError, ValueError) as exc:
                logger.warning("Ignoring unreadable %s (rebuilt from the log tail on start): %s", path, exc)
                ops.remove(path)
                continue
            index._by_segment[int(stem)] = [e for e in entries if e.last_offset < log_end]
            index._on_disk[int(stem)] = entries
        index.regroup(bases, fsync=fsync)
        return index

    def regroup(self, segment_bases: list[int], dropped: Collection[int] = (), *, fsync: bool = False) -> None:
        """The log's segments are now `segment_bases` (ascending): a cleaning merged segments, or files were found
        on open. Each entry moves to the segment holding its marker; entries below the first segment go, and so do
        those whose marker the cleaning removed (`dropped`: marker offsets).

        Files whose content changed are rewritten first (with `fsync`, each file and then their directory once are
        fsynced), and only then are the files of segments no longer in the log removed: a crash in between leaves an
        entry in two files, which the next `load` keeps once (an abort marker's offset names its entry)."""
        by_marker = {e.last_offset: e for group in self._by_segment.values() for e in group}
        regrouped: dict[int, list[AbortedTxn]] = {}
        for last_offset in sorted(by_marker.keys() - set(dropped)):
            at = bisect_right(segment_bases, last_offset) - 1
            if at >= 0:
                regrouped.setdefault(segment_bases[at], []).append(by_marker[last_offset])
        if self._directory is not None:
            changed = [(base, group) for base, group in regrouped.items() if self._on_disk.get(base) != group]
            for base, group in changed:
                data = b"".join(entry.encode() for entry in group)
                path = txn_index_path(self._directory, base)
                replace_atomically(self._ops, path, data, fsync=fsync, sync_parent=False)
            if fsync and changed:
                self._ops.fsync_directory(self._directory)  # once for every rename, before any file goes
            for base in set(self._on_disk) - set(regrouped):
                self._ops.remove(txn_index_path(self._directory, base))
            self._on_disk = {base: list(group) for base, group in regrouped.items()}
        self._by_segment = regrouped
        self._reindex()

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, segment_base: int, entry: AbortedTxn) -> None:
        """Record an abort whose marker was just written to the segment starting at `segment_base`."""
        if self._entries and entry.last_offset <= self._entries[-1].last_offset:
            raise ValueError(f"abort marker at {entry.last_offset} is not after the last indexed one")
        self._by_segment.setdefault(segment_base, []).append(entry)
        self._entries.append(entry)
        self._last_offsets.append(entry.last_offset)
        if self._directory is not None:
            self._on_disk.setdefault(segment_base, []).append(entry)
            path = txn_index_path(self._directory, segment_base)
            fd = self._ops.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            try:
                self._ops.pwrite(fd, entry.encode(), self._ops.size(fd))
            finally:
                self._ops.close(fd)

    def contains(self, last_offset: int) -> bool:
        """Whether an entry for the abort marker at `last_offset` is indexed."""
        at = bisect_left(self._last_offsets, last_offset)
        return at < len(self._last_offsets) and self._last_offsets[at] == last_offset

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start, end): `last_offset >= start and first_offset < end`."""
        return [entry for entry in self._entries[bisect_left(self._last_offsets, start) :] if entry.first_offset < end]

    def truncate_to(self, offset: int) -> None:
        """Forget every entry whose abort marker is at or after `offset` (the log is being cut there)."""
        for base, entries in list(self._by_segment.items()):
            kept = [entry for entry in entries if entry.last_offset < offset]
            if len(kept) != len(entries):
                self._by_segment[base] = kept
                self._rewrite(base)
        self._reindex()

    def drop_segments(self, bases: Iterable[int]) -> None:
        """The segments starting at `bases` left the log: their entries and files go with them."""
        for base in bases:
            self._by_segment.pop(base, None)
            if self._on_disk.pop(base, None) is not None and self._directory is not None:
                self._ops.remove(txn_index_path(self._directory, base))
        self._reindex()

    def _rewrite(self, base: int) -> None:
        if self._directory is None:
            if not self._by_segment[base]:
                del self._by_segment[base]
            return
        path = txn_index_path(self._directory, base)
        entries = self._by_segment[base]
        if entries:
            replace_atomically(self._ops, path, b"".join(entry.encode() for entry in entries), fsync=False)
            self._on_disk[base] = list(entries)
        else:
            del self._by_segment[base]
            self._on_disk.pop(base, None)
            self._ops.remove(path)

    def _reindex(self) -> None:
        self._entries = sorted(
            (entry for entries in self._by_segment.values() for entry in entries), key=lambda e: e.last_offset
        )
        self._last_offsets = [entry.last_offset for entry in self._entries]
