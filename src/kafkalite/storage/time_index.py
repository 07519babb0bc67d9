"""Time index: 12-byte entries mapping a timestamp to an offset (Kafka's `TimeIndex`, `.timeindex` file).

Entry = 8-byte timestamp, 4-byte offset relative to the segment's base offset, both big-endian. An entry
(T, o) says: T is the largest batch max timestamp in the segment up to offset o, and o is the last offset of the
first batch that reached T. Entries are added at the same moments as offset-index entries, and once more when the
segment stops being active (roll or close), but only when the timestamp grows (Kafka's `maybeAppend`).

Invariant: timestamps strictly increase and offsets never decrease, so every batch before the one holding o has a
max timestamp <= T; a search for the first record at or after a target timestamp starts from the last entry whose
timestamp is <= the target. The entries mirror the file in a `bytearray` (`FixedWidthIndex`, shared with the offset
index).
"""

from __future__ import annotations

import struct

from kafkalite.storage.fixed_width_index import FixedWidthIndex

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size
NO_TIMESTAMP = -1


class TimeIndex(FixedWidthIndex):
    """The entries of one segment's `.timeindex`; see the module docstring."""

    __slots__ = ()
    ENTRY = ENTRY

    def entry(self, n: int) -> tuple[int, int]:
        """The n-th entry as (timestamp, absolute offset)."""
        timestamp, relative = ENTRY.unpack_from(self.entries, n * ENTRY_SIZE)
        return timestamp, self.base_offset + relative

    def last_entry(self) -> tuple[int, int]:
        """The last entry, or (NO_TIMESTAMP, base offset) when there is none (as Kafka answers).

        Counts whole entries only: a file torn inside its first entry must reach `problem()` (then a rebuild), not
        crash here first.
        """
        return self.entry(len(self) - 1) if len(self) else (NO_TIMESTAMP, self.base_offset)

    def lookup(self, timestamp: int) -> int:
        """Offset of the last entry whose timestamp is <= `timestamp`; the base offset when there is none."""
        found = self._count_keys_at_most(timestamp)
        return self.base_offset if found == 0 else self.entry(found - 1)[1]

    def encode_entry_if_newer(self, timestamp: int, offset: int) -> bytes | None:
        """The bytes of a new last entry when `timestamp` is larger than the last one, else None."""
        if timestamp <= self.last_entry()[0]:
            return None
        return ENTRY.pack(timestamp, offset - self.base_offset)

    def truncate_to_offset(self, offset: int) -> None:
        """Drop the entries whose offset is `offset` or beyond (the log is being cut there)."""
        self._drop_tail_from(1, offset - self.base_offset)

    def problem(self) -> str | None:
        """Why these entries are not a valid time index, or None when they are sane."""
        if (size_problem := self._size_problem()) is not None:
            return size_problem
        previous_timestamp, previous_relative = NO_TIMESTAMP, 0
        for timestamp, relative in ENTRY.iter_unpack(self.entries):
            if timestamp <= previous_timestamp or relative < previous_relative:
                return f"entry ({timestamp}, {relative}) does not increase"
            previous_timestamp, previous_relative = timestamp, relative
        return None
