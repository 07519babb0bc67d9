"""Small files replaced atomically: topic metadata, the log-start-offset checkpoint.

`write_atomically` writes `<name>.tmp` in the same directory, fsyncs it, renames it over `<name>` and fsyncs the
directory, so after a crash a reader finds either the old content or the new, never a mix. Blocking: call it where a
few milliseconds of disk wait are acceptable (topic creation, DeleteRecords), not on the produce path.
"""

from __future__ import annotations

import os
from pathlib import Path

from kafkalite.errors import StorageError

TEMP_SUFFIX = ".tmp"


def fsync_directory(directory: Path) -> None:
    """Make creations, renames and deletions of entries in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Replace `path` with `data` atomically; `fsync=False` keeps the rename but skips the fsyncs."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        if fsync:
            fsync_directory(path.parent)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def read_file(path: Path) -> bytes | None:
    """The content of `path`, or None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
