"""Helpers shared by the storage tests: batch builders and a fake clock."""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.protocol.records import BatchHeader, RecordToWrite, build_batch, read_header
from kafkalite.storage import Log


class FakeClock:
    """Milliseconds that move only when a test says so."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def make_batch(count: int = 1, *, timestamp: int = 1_000, value_size: int = 10, tag: int = 0) -> bytearray:
    """A batch of `count` records with timestamps `timestamp`, `timestamp + 1`, ..."""
    records = [
        RecordToWrite(value=bytes([(tag + i) % 256]) * value_size, key=b"k%d" % i, timestamp=timestamp + i)
        for i in range(count)
    ]
    return bytearray(build_batch(records, now_ms=timestamp))


def append(log: Log, batch: bytes | bytearray | memoryview) -> tuple[int, int]:
    header: BatchHeader = read_header(batch)
    return log.append(batch, header)


LogFactory = Callable[..., Log]
