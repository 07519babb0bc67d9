"""Sparse offset index: one 8-byte entry per `index_interval_bytes` of log (Kafka's `OffsetIndex`, `.index` file).

Entry = 4-byte offset relative to the segment's base offset, 4-byte byte position in the .log file, both big-endian.
The offset is the *last* offset of the batch that starts at the position, as Kafka writes it: an entry is added
before a batch is appended once more than `index_interval_bytes` were appended since the previous entry (so the
first batch of a segment never gets one).

Invariant: entries are strictly increasing in both fields, so a lookup is a binary search for the last entry whose
offset is <= the target, followed by a forward scan of at most `index_interval_bytes` in the log.

The entries live in a `bytearray` that mirrors the file byte for byte (`FixedWidthIndex`, shared with the time
index), so the file never carries Kafka's preallocated zero tail; memory cost is 8 bytes per 4 KiB of log.
"""

from __future__ import annotations

import struct

from kafkalite.storage.fixed_width_index import FixedWidthIndex

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size


class OffsetIndex(FixedWidthIndex):
    """The entries of one segment's `.index`; see the module docstring."""

    __slots__ = ()
    ENTRY = ENTRY

    def entry(self, n: int) -> tuple[int, int]:
        """The n-th entry as (absolute offset, position)."""
        relative, position = ENTRY.unpack_from(self.entries, n * ENTRY_SIZE)
        return self.base_offset + relative, position

    def last_entry(self) -> tuple[int, int] | None:
        return self.entry(len(self) - 1) if len(self) else None  # whole entries: a torn file is rebuilt, not read

    def lookup(self, offset: int) -> int:
        """Position of the last entry whose offset is <= `offset`; 0 (the segment start) when there is none."""
        found = self._count_keys_at_most(offset - self.base_offset)
        return 0 if found == 0 else self.entry(found - 1)[1]

    def last_position_at_most(self, position: int) -> int:
        """The largest indexed position <= `position`; 0 (the segment start) when there is none."""
        low, high = 0, len(self)
        while low < high:  # positions increase along the entries: binary search on the second field
            middle = (low + high) // 2
            if ENTRY.unpack_from(self.entries, middle * ENTRY_SIZE)[1] <= position:
                low = middle + 1
            else:
                high = middle
        return 0 if low == 0 else self.entry(low - 1)[1]

    def encode_entry(self, offset: int, position: int) -> bytes:
        """The bytes of a new last entry; `append` adds them once they are on disk."""
        return ENTRY.pack(offset - self.base_offset, position)

    def truncate_to_position(self, position: int) -> None:
        """Drop the entries pointing at `position` or beyond (the log is being cut there)."""
        self._drop_tail_from(1, position)

    def problem(self, log_size: int) -> str | None:
        """Why these entries cannot index a log of `log_size` bytes, or None when they are sane."""
        if (size_problem := self._size_problem()) is not None:
            return size_problem
        previous_relative, previous_position = -1, -1
        for relative, position in ENTRY.iter_unpack(self.entries):
            if relative <= previous_relative or position <= previous_position:
                return f"entry ({relative}, {position}) does not increase"
            if position >= log_size:
                return f"entry position {position} is beyond the log size {log_size}"
            previous_relative, previous_position = relative, position
        return None
