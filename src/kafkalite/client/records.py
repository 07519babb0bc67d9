"""What producers hand in and consumers get back."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a sent record landed. `dead_lettered`: the original partition stayed full through every retry, so the
    record went to `<topic>.DLQ` instead, and `topic`/`partition`/`offset` name that dead-letter record."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    dead_lettered: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """One consumed record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
