"""Helpers shared by the storage tests: batch builders, a fake clock, file operations written down in order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafkalite.protocol.records import BatchHeader, RecordToWrite, build_batch, read_header
from kafkalite.storage import Log
from kafkalite.storage.file_ops import FileOps


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


class RecordingOps(FileOps):
    """Real file operations, with the ones that change what survives a crash written down in order (by file name),
    and the fsyncs of `failing_fsyncs` failing."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.failing_fsyncs: set[str] = set()  # file names whose fsync fails with EIO
        self._paths: dict[int, str] = {}

    def open(self, path: Path, flags: int) -> int:
        fd = super().open(path, flags)
        self._paths[fd] = path.name
        return fd

    def dup(self, fd: int) -> int:
        copy = super().dup(fd)
        self._paths[copy] = self._paths[fd]
        return copy

    def close(self, fd: int) -> None:
        self._paths.pop(fd, None)
        super().close(fd)

    def fsync(self, fd: int) -> None:
        self.calls.append(("fsync", self._paths[fd]))
        if self._paths[fd] in self.failing_fsyncs:
            raise OSError(5, "Input/output error")
        super().fsync(fd)

    def fsync_directory(self, directory: Path) -> None:
        self.calls.append(("fsync_directory", directory.name))
        super().fsync_directory(directory)

    def rename(self, source: Path, target: Path) -> None:
        self.calls.append(("rename", target.name))
        super().rename(source, target)

    def remove(self, path: Path) -> None:
        self.calls.append(("remove", path.name))
        super().remove(path)
