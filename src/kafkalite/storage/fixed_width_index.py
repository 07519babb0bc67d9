"""`FixedWidthIndex`: the mechanism `OffsetIndex` and `TimeIndex` share; their modules state format and invariant.

An index file is a run of fixed-width, big-endian entries (`ENTRY`, a `struct.Struct`) whose first field is the
search key and increases along the file. The entries live in a `bytearray` that mirrors the file byte for byte: the
segment writes a new entry through to the file, then `append`s it here, and after a cut truncates the file to
`size_bytes`. Only whole entries count; a size that is not a multiple of the entry width is a `problem`, so a file
torn inside an entry is rebuilt, never read.
"""

from __future__ import annotations

import struct
from typing import ClassVar


class FixedWidthIndex:
    """Entries of one index file, relative to the segment's `base_offset`; see the module docstring."""

    __slots__ = ("base_offset", "entries")
    ENTRY: ClassVar[struct.Struct]

    def __init__(self, base_offset: int, entries: bytes | bytearray = b"") -> None:
        self.base_offset = base_offset
        self.entries = bytearray(entries)

    def __len__(self) -> int:
        return len(self.entries) // self.ENTRY.size

    @property
    def size_bytes(self) -> int:
        return len(self.entries)

    def append(self, encoded_entry: bytes) -> None:
        self.entries += encoded_entry

    def _count_keys_at_most(self, key: int) -> int:
        """How many entries have a first field <= `key`: a binary search, since the keys increase."""
        unpack_from, width = self.ENTRY.unpack_from, self.ENTRY.size
        low, high = 0, len(self)
        while low < high:
            middle = (low + high) // 2
            if unpack_from(self.entries, middle * width)[0] <= key:
                low = middle + 1
            else:
                high = middle
        return low

    def _drop_tail_from(self, field: int, value: int) -> None:
        """Drop the trailing entries whose `field`, as stored (offsets relative to the base), is `value` or more."""
        unpack_from, width = self.ENTRY.unpack_from, self.ENTRY.size
        keep = len(self)
        while keep > 0 and unpack_from(self.entries, (keep - 1) * width)[field] >= value:
            keep -= 1
        del self.entries[keep * width :]

    def _size_problem(self) -> str | None:
        if len(self.entries) % self.ENTRY.size:
            return f"size {len(self.entries)} is not a multiple of {self.ENTRY.size}"
        return None
