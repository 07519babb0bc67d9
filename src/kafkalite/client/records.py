"""What producers hand in and consumers get back.

Both are NamedTuples rather than frozen dataclasses: one is made per record on the produce and consume paths, and
a frozen dataclass costs several times more to create (every field goes through `object.__setattr__`). They stay
immutable, with the same field names and order; the hot paths build them in bulk with `tuple.__new__`.
"""

from __future__ import annotations

from typing import NamedTuple


class RecordMetadata(NamedTuple):
    """Where a sent record landed. `dead_lettered`: the original partition stayed full through every retry, so the
    record went to `<topic>.DLQ` instead, and `topic`/`partition`/`offset` name that dead-letter record."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    dead_lettered: bool = False


class Message(NamedTuple):
    """One consumed record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
