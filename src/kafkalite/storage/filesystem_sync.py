"""Linux's `syncfs(2)` for the group-commit thread: when it may stand in for an `fdatasync` per file, and the calls.

One `syncfs` writes out every dirty file and directory of a filesystem and flushes the device's cache once, where each
`fdatasync` flushes it again (`bench/fsync_parallel.py`: 2.8–7.5× the sync steps of 8 files). It may stand in for
`fdatasync` only where it promises as much, so `device_for_syncfs` answers a device number only when all of these
hold, and None otherwise (the caller then keeps its `fdatasync`s):

- **Linux 5.17 or later.** Since 5.8 `syncfs` reports a write-back error of the filesystem's files; only since 5.17
  does it also report the filesystem's own sync step failing (a failed cache flush, journal commit or log force),
  which `fdatasync` reports.
- **A local block filesystem that `syncfs` flushes**: ext4, xfs, btrfs or f2fs, read from `/proc/self/mountinfo` by
  the descriptor's device. On network and FUSE filesystems (9p, virtiofs, CIFS, NFS, sshfs, a container's bind mount
  through a VM) `syncfs` may return success without asking the storage behind them to persist anything, where
  `fdatasync` does.
- **The C library has `syncfs` and `sync_file_range`**, and ctypes imports (a Python built without libffi has none).
  The library is looked up on first use, so a broker that never syncs several partitions at once never imports
  ctypes. A call refused at run time (ENOSYS, EPERM: a seccomp filter) makes the calls unavailable from then on.

`syncfs` reports an error of the filesystem as a whole once per open file: a write-back error of one file, reported
through another file's descriptor, is not reported again through that one. So after a successful `syncfs` each file it
stands in for is asked for its own write-back error with `sync_file_range(SYNC_FILE_RANGE_WAIT_BEFORE)` over the whole
file (`check_written`): it waits for nothing (`syncfs` already waited) and reports, as `fdatasync` would, any error
the file's pages met since that descriptor last looked.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Final

SYNCFS_REPORTS_ALL_ERRORS_SINCE: Final = (5, 17)
SYNCFS_FILESYSTEMS: Final = frozenset({"ext4", "xfs", "btrfs", "f2fs"})
MOUNTINFO: Final = "/proc/self/mountinfo"
SYNC_FILE_RANGE_WAIT_BEFORE: Final = 1
_REFUSED: Final = frozenset({errno.ENOSYS, errno.EPERM, errno.EACCES, errno.EOPNOTSUPP})


class SyncfsUnavailable(OSError):
    """The call could not be made here (refused by the kernel); nothing was synced, and nothing failed."""


def kernel_version(release: str) -> tuple[int, int]:
    """(major, minor) of a Linux release string such as "6.1.0-18-amd64", (0, 0) when it does not start with them."""
    found = re.match(r"(\d+)\.(\d+)", release)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def filesystem_types(mountinfo: str) -> dict[tuple[int, int], str]:
    """(major, minor) of each mount's device → its filesystem type, from the text of `/proc/self/mountinfo` (a device
    mounted twice keeps its first line's type)."""
    types: dict[tuple[int, int], str] = {}
    for line in mountinfo.splitlines():
        fields = line.split()
        try:
            separator = fields.index("-")
            major, minor = fields[2].split(":")
            types.setdefault((int(major), int(minor)), fields[separator + 1])
        except (ValueError, IndexError):
            continue  # a line of a shape this reader does not know: its device stays unknown
    return types


class _CLibrary:
    """`syncfs` and `sync_file_range` from the C library, looked up once, on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._looked_up = False
        self.syncfs: Callable[[int], int] | None = None
        self.sync_file_range: Callable[[int, int, int, int], int] | None = None

    def available(self) -> bool:
        with self._lock:
            if not self._looked_up:
                self._looked_up = True
                self._look_up()
            return self.syncfs is not None and self.sync_file_range is not None

    def forget(self) -> None:
        """The kernel refused a call: use neither from now on."""
        self.syncfs = self.sync_file_range = None

    def _look_up(self) -> None:
        if not sys.platform.startswith("linux") or kernel_version(os.uname().release) < SYNCFS_REPORTS_ALL_ERRORS_SINCE:
            return
        try:
            import ctypes

            library = ctypes.CDLL(None, use_errno=True)
            syncfs, sync_file_range = library.syncfs, library.sync_file_range
        except (ImportError, AttributeError, OSError):  # no ctypes, or a C library without them
            return
        syncfs.argtypes, syncfs.restype = [ctypes.c_int], ctypes.c_int
        sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        sync_file_range.restype = ctypes.c_int
        self.syncfs, self.sync_file_range = syncfs, sync_file_range


_library = _CLibrary()
_types_lock = threading.Lock()
_types_by_device: dict[tuple[int, int], str] | None = None


def available() -> bool:
    """Whether this kernel and C library offer the calls (the filesystem is `device_for_syncfs`'s question)."""
    return _library.available()


def device_for_syncfs(fd: int) -> int | None:
    """The device of `fd`'s filesystem when one `syncfs` may stand in for `fdatasync` on its files; see the module
    docstring. Reads `/proc/self/mountinfo` once, and again for a device it did not list then (a new mount)."""
    global _types_by_device
    if not _library.available():
        return None
    device = os.fstat(fd).st_dev
    key = (os.major(device), os.minor(device))
    with _types_lock:
        if _types_by_device is None or key not in _types_by_device:
            try:
                with open(MOUNTINFO, encoding="utf-8", errors="replace") as mountinfo:
                    _types_by_device = filesystem_types(mountinfo.read())
            except OSError:
                _types_by_device = {}
        kind = _types_by_device.get(key)
    return device if kind in SYNCFS_FILESYSTEMS else None


def sync_filesystem(fd: int) -> None:
    """`syncfs(fd)`: raises `OSError` when it failed, `SyncfsUnavailable` when the kernel refused the call."""
    call = _library.syncfs
    if call is None:
        raise SyncfsUnavailable(errno.ENOSYS, "syncfs is not available here")
    if call(fd) != 0:
        _raise_errno()


def check_written(fd: int) -> None:
    """Raise the write-back error `fd`'s file met since this descriptor last looked, if any (see the module
    docstring); waits for nothing when `syncfs` has just written the file out."""
    call = _library.sync_file_range
    if call is None:
        raise SyncfsUnavailable(errno.ENOSYS, "sync_file_range is not available here")
    if call(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE) != 0:
        _raise_errno()


def _raise_errno() -> None:
    import ctypes

    code = ctypes.get_errno()
    if code in _REFUSED:
        _library.forget()
        raise SyncfsUnavailable(code, os.strerror(code))
    raise OSError(code, os.strerror(code))
