"""One broker per data directory: the `.lock` file Kafka keeps in every log directory, held with `flock`.

Two brokers over one directory would each take the other's segment files for their own and write over them: records
one of them acknowledged would be gone. `DirectoryLock.acquire` creates `<data_dir>/.lock`, takes an exclusive,
non-blocking `flock` on it and writes the holder's process id into it, so that a second broker (another process, or
a second `Broker` in the same one) is refused with a message that names the directory and that process. The lock
belongs to the open file, so a broker killed with -9 leaves nothing to clean up: the file stays, unlocked.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from kafkalite.errors import DataDirectoryInUseError

LOCK_FILE = ".lock"


class DirectoryLock:
    """The held lock of one data directory; `release` (or the process's end) lets the next broker take it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @classmethod
    def acquire(cls, data_dir: Path) -> DirectoryLock:
        """Lock `data_dir` (created if missing) for this broker, or raise `DataDirectoryInUseError`. A directory that
        cannot be made or opened raises the `OSError` (with its file name), as any other file of the broker would."""
        path = data_dir / LOCK_FILE
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            by = f" (process {holder})" if holder.isdigit() else ""
            raise DataDirectoryInUseError(
                f"data directory {data_dir} is in use by another broker{by}; stop it first, or use another directory"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd)

    def release(self) -> None:
        """Unlock (closing the file releases the `flock`); the file stays for the next broker."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)
