"""Reading the fields of Kafka's internal record schemas (`__transaction_state`, the groups of `__consumer_offsets`):
big-endian numbers, int16-length strings, int32-length bytes, and for flexible versions unsigned varints, compact
strings and tagged fields. Every read is checked against the record's end, so a damaged record is a CorruptRecordError
naming what was being read (`what`), never a struct error or a slice past the end.
"""

from __future__ import annotations

import struct

from kafkalite.errors import CorruptRecordError


class SchemaReader:
    """A cursor over one record's key or value; `what` names the record in error messages ("group metadata")."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def unpack(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptRecordError(f"{self.what} record ends at byte {len(self.data)}, reading {fmt}")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise CorruptRecordError(f"{self.what} field of {size} bytes overruns its record")
        self.pos += size
        return self.data[self.pos - size : self.pos]

    def _text(self, size: int) -> str:
        try:
            return self.take(size).decode()
        except UnicodeDecodeError as exc:
            raise CorruptRecordError(f"{self.what} string is not UTF-8: {exc}") from None

    def nullable_string(self) -> str | None:
        """int16 length (-1: null) and UTF-8."""
        (length,) = self.unpack(">h")
        if length < -1:
            raise CorruptRecordError(f"{self.what} string of length {length}")
        return None if length == -1 else self._text(length)

    def string(self) -> str:
        text = self.nullable_string()
        if text is None:
            raise CorruptRecordError(f"a null string where a {self.what} record needs one")
        return text

    def bytes(self) -> bytes:
        """int32 length and the bytes (never null here)."""
        (length,) = self.unpack(">i")
        if length < 0:
            raise CorruptRecordError(f"{self.what} bytes of length {length}")
        return self.take(length)

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            (byte,) = self.unpack(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise CorruptRecordError(f"{self.what} varint is longer than 5 bytes")

    def compact_string(self) -> str:
        """Unsigned varint length + 1 (0: null, refused here) and UTF-8."""
        length = self.uvarint() - 1
        if length < 0:
            raise CorruptRecordError(f"a null string where a {self.what} record needs one")
        return self._text(length)

    def tags(self) -> list[tuple[int, SchemaReader]]:
        """The tagged fields: (tag, a reader over its bytes)."""
        fields = []
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields.append((tag, SchemaReader(self.take(self.uvarint()), self.what)))
        return fields

    def at_end(self) -> bool:
        return self.pos == len(self.data)
