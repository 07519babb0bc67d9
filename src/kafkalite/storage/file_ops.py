"""The system calls the file engine makes, behind one small object so tests can inject faults.

Production uses `FileOps` as is: each method is the bare `os` call. A test subclasses it to make, say, the next
`pwrite` or `fsync` raise `OSError`, and passes the instance to `PartitionLog.open(..., file_ops=...)`. The engine
turns every `OSError` into `StorageError` naming the file, so callers never see a raw `OSError`.

`fsync` may run in a worker thread (group commit, the roll checkpoint); it only ever receives file descriptors the
engine duplicated for that purpose, so closing a segment on the event loop never races with it.

`replace_atomically` builds the engine's small checkpoint files (`recovery-point`, `log-start-offset`, the
clean-shutdown marker) from these same calls rather than from `atomic_file`, so a test's `FileOps` sees every byte the
engine puts in a partition directory, which is what a simulated power cut needs.

`sync_filesystem` is Linux's `syncfs(2)`: one call that writes out every dirty file and directory of the filesystem
holding a descriptor and flushes the device's cache once, where `fdatasync` flushes it once per file. The group-commit
thread uses it for a batch that would otherwise take several `fdatasync`s on one filesystem (`group_commit`). It is
offered (`syncs_filesystems`) only on Linux 5.8 or later: older kernels return success from `syncfs` even when a
write-back failed, which would let an acknowledged write be lost unreported.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

_fdatasync = getattr(os, "fdatasync", os.fsync)  # appends change the size, which fdatasync also flushes
SYNCFS_REPORTS_ERRORS_SINCE = (5, 8)  # Linux: before it, syncfs returned 0 whatever write-back failed


def _kernel_version() -> tuple[int, int]:
    """(major, minor) of the running Linux kernel, (0, 0) when the release string does not start with them."""
    parts = os.uname().release.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1].split("-")[0] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return 0, 0


class _Syncfs:
    """`syncfs(2)` from the C library, looked up on first use (ctypes is not imported by a broker that never needs
    it). The call releases the interpreter lock while the kernel works, as `os.fdatasync` does."""

    def __init__(self) -> None:
        self._call: Callable[[int], int] | None = None
        self._available: bool | None = None

    def available(self) -> bool:
        if self._available is None:
            self._available = self._lookup() is not None
        return self._available

    def __call__(self, fd: int) -> None:
        call = self._lookup()
        if call is None:
            raise OSError(errno.ENOSYS, "syncfs is not available here")
        if call(fd) != 0:
            import ctypes

            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    def _lookup(self) -> Callable[[int], int] | None:
        if self._call is None and self._available is not False:
            if not sys.platform.startswith("linux") or _kernel_version() < SYNCFS_REPORTS_ERRORS_SINCE:
                self._available = False
                return None
            import ctypes

            try:
                function = ctypes.CDLL(None, use_errno=True).syncfs
            except (AttributeError, OSError):  # a C library without it
                self._available = False
                return None
            function.argtypes = [ctypes.c_int]
            function.restype = ctypes.c_int
            self._call = function
        return self._call


_syncfs = _Syncfs()


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

    @property
    def sync_scope(self) -> object:
        """Objects with the same scope act on the same disks, so one's `sync_filesystem` serves the others' files: every
        plain `FileOps` does (a test's fault-injecting one may set its own)."""
        return FileOps

    @property
    def syncs_filesystems(self) -> bool:
        """Whether `sync_filesystem` may be called (Linux 5.8 or later; see the module docstring)."""
        return _syncfs.available()

    def sync_filesystem(self, fd: int) -> None:
        """Make every file and directory change on the filesystem holding `fd` durable (`syncfs`)."""
        _syncfs(fd)

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
