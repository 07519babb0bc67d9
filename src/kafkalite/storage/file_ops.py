"""The system calls the file engine makes, behind one small object so tests can inject faults.

Production uses `FileOps` as is: each method is the bare `os` call. A test subclasses it to make, say, the next
`pwrite` or `fsync` raise `OSError`, and passes the instance to `PartitionLog.open(..., file_ops=...)`. The engine
turns every `OSError` into `StorageError` naming the file, so callers never see a raw `OSError`.

`fsync` may run in a worker thread (group commit, the roll checkpoint); it only ever receives file descriptors the
engine duplicated for that purpose, so closing a segment on the event loop never races with it.

`replace_atomically` builds the engine's small checkpoint files (`recovery-point`, `log-start-offset`, the
clean-shutdown marker) from these same calls rather than from `atomic_file`, so a test's `FileOps` sees every byte the
engine puts in a partition directory, which is what a simulated power cut needs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

_fdatasync = getattr(os, "fdatasync", os.fsync)  # appends change the size, which fdatasync also flushes


def _finish_write(fd: int, data: bytes | bytearray | memoryview, position: int, written: int) -> None:
    """Write what a short write left (rare on regular files: the disk filled mid-write), or raise its `OSError`."""
    view = memoryview(data)
    while written < len(view):
        written += os.pwrite(fd, view[written:], position + written)


class FileOps:
    """Direct `os` calls; see the module docstring."""

    def open(self, path: Path, flags: int) -> int:
        return os.open(path, flags | os.O_CLOEXEC, 0o644)

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
        _finish_write(fd, data, position, os.pwrite(fd, data, position))

    def pwritev(self, fd: int, parts: Sequence[bytes | bytearray | memoryview], position: int) -> None:
        """Write `parts` back to back at `position` in one system call, without joining them first (an appended
        batch goes to disk as its new 8-byte base offset followed by the rest of the request's bytes)."""
        written = os.pwritev(fd, parts, position)
        if written < sum(map(len, parts)):
            _finish_write(fd, b"".join(parts), position, written)

    def pread(self, fd: int, size: int, position: int) -> bytes:
        return os.pread(fd, size, position)

    def copy_range(self, source_fd: int, target_fd: int, position: int, count: int) -> int:
        """Copy up to `count` bytes at `position` from one file to the same place in another, in the kernel."""
        return os.copy_file_range(source_fd, target_fd, count, position, position)

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def modified_ms(self, fd: int) -> int:
        return os.fstat(fd).st_mtime_ns // 1_000_000

    def dup(self, fd: int) -> int:
        return os.dup(fd)

    def fsync(self, fd: int) -> None:
        _fdatasync(fd)

    def fsync_directory(self, directory: Path) -> None:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self, fd: int) -> None:
        os.close(fd)

    def rename(self, source: Path, target: Path) -> None:
        os.replace(source, target)

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)


TEMP_SUFFIX = ".tmp"


def replace_atomically(ops: FileOps, path: Path, data: bytes, *, fsync: bool, sync_parent: bool = True) -> None:
    """Replace `path` with `data` so that after a crash it holds the old content or the new, never a mix.

    Write `<name>.tmp`, fsync it, rename it over `path`, fsync the directory (`fsync=False` keeps the rename, which is
    enough against kill -9, and skips both fsyncs; `sync_parent=False` leaves the directory's fsync to a caller that
    replaces several files). Raises `OSError`; callers name the file in a `StorageError`.
    """
    temp = path.with_name(path.name + TEMP_SUFFIX)
    fd = ops.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        ops.pwrite(fd, data, 0)
        if fsync:
            ops.fsync(fd)
    finally:
        ops.close(fd)
    ops.rename(temp, path)
    if fsync and sync_parent:
        ops.fsync_directory(path.parent)
