"""A `FileOps` that simulates power loss: it knows what is durable, and a power cut tears everything else.

Model (POSIX's promise, no more): a file's content is durable as of its last `fsync`; a directory change (create,
remove, rename) is durable once its directory is fsynced. Files the tracker meets on disk without having written them
are durable as found (they are what the previous cut left). Nothing here calls the real fsync: durability is simulated,
so the disk's speed does not matter.

`power_cut()`, atomically with every other call, then:
  * for each file written since its last fsync, keeps the prefix it shares with its durable content and replaces the
    rest with one of: the durable content (nothing new reached the disk), nothing (cut right there), a random-length
    prefix of what was written, zeros, random garbage, or what was written with random 512-byte blocks zeroed;
  * keeps a random prefix of the directory changes not yet fsynced (journaling filesystems commit them in order) and
    undoes the rest, newest first: a created file vanishes, a removed one comes back with its durable content, a
    rename is undone as one step (the journal commits it atomically): the target gets its old content back, or
    vanishes, and the source name comes back with the durable content it carried;
  * closes every descriptor; every later call on this instance fails with EIO (the machine is off), so threads the
    abandoned log left running cannot touch the files the next incarnation opens.

`kill()` is kill -9 instead: the process's descriptors close and its calls fail from then on, but the page cache
survives, so nothing is torn and nothing becomes durable; the returned `PowerCutOps` (the next process) shares the
record, so a power cut after a restart still tears what the killed process wrote and never fsynced.
"""

from __future__ import annotations

import errno
import os
import random
import threading
from collections.abc import Sequence
from pathlib import Path

from kafkalite.storage.file_ops import FileOps

BLOCK = 512
TEARS = ("durable", "cut", "prefix", "zeros", "garbage", "holes")


class PowerCutOps(FileOps):
    """Real file calls plus a record of what a power cut would keep; see the module docstring."""

    def __init__(self, rng: random.Random, previous: PowerCutOps | None = None) -> None:
        self._rng = rng
        self._dead = False
        self._paths: dict[int, Path] = {}
        if previous is None:
            self._lock = threading.RLock()
            self._durable: dict[Path, bytes] = {}
            # (kind, path, durable content before or None, the source of a rename or None): directory changes not yet
            # fsynced, oldest first
            self._pending_entries: list[tuple[str, Path, bytes | None, Path | None]] = []
            self.tears: dict[str, int] = dict.fromkeys(TEARS, 0)
        else:  # the same disk, seen by the next process
            self._lock = previous._lock
            self._durable = previous._durable
            self._pending_entries = previous._pending_entries
            self.tears = previous.tears

    def kill(self) -> PowerCutOps:
        """kill -9 this process; return the file ops of the next one (see the module docstring)."""
        with self._lock:
            self._die()
            return PowerCutOps(self._rng, self)

    def _die(self) -> None:
        self._dead = True
        for fd in self._paths:
            os.close(fd)
        self._paths.clear()

    def _alive(self) -> None:
        if self._dead:
            raise OSError(errno.EIO, "the power is off")

    def _durable_of(self, path: Path) -> bytes | None:
        """The durable content of `path`, learning it from the disk the first time (None: no such file)."""
        if path not in self._durable:
            if not path.exists():
                return None
            self._durable[path] = path.read_bytes()
        return self._durable[path]

    def open(self, path: Path, flags: int) -> int:
        with self._lock:
            self._alive()
            if self._durable_of(path) is None and flags & os.O_CREAT:
                self._pending_entries.append(("create", path, None, None))
                self._durable[path] = b""
            fd = super().open(path, flags)
            self._paths[fd] = path
            return fd

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
        with self._lock:
            self._alive()
            super().pwrite(fd, data, position)

    def pwritev(self, fd: int, parts: Sequence[bytes | bytearray | memoryview], position: int) -> None:
        with self._lock:
            self._alive()
            super().pwritev(fd, parts, position)

    def pread(self, fd: int, size: int, position: int) -> bytes:
        with self._lock:
            self._alive()
            return super().pread(fd, size, position)

    def truncate(self, fd: int, size: int) -> None:
        with self._lock:
            self._alive()
            super().truncate(fd, size)

    def size(self, fd: int) -> int:
        with self._lock:
            self._alive()
            return super().size(fd)

    def dup(self, fd: int) -> int:
        with self._lock:
            self._alive()
            duplicate = super().dup(fd)
            self._paths[duplicate] = self._paths[fd]
            return duplicate

    def fsync(self, fd: int) -> None:
        with self._lock:
            self._alive()
            path = self._paths[fd]
            try:
                same_file = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same_file = False  # fsync of a removed file: its content no longer matters
            if same_file:  # read by path: the descriptor may be write-only (a checkpoint's temp file)
                self._durable[path] = path.read_bytes()

    def fsync_directory(self, directory: Path) -> None:
        with self._lock:
            self._alive()
            self._pending_entries[:] = [entry for entry in self._pending_entries if entry[1].parent != directory]

    def close(self, fd: int) -> None:
        with self._lock:
            if self._dead:  # power_cut closed it already; the number may belong to someone else by now
                return
            self._paths.pop(fd, None)
            super().close(fd)

    def rename(self, source: Path, target: Path) -> None:
        with self._lock:
            self._alive()
            previous = self._durable_of(target)
            self._durable[target] = self._durable.pop(source, b"")
            self._pending_entries.append(("rename", target, previous, source))
            super().rename(source, target)

    def remove(self, path: Path) -> None:
        with self._lock:
            self._alive()
            previous = self._durable_of(path)
            if previous is not None:
                self._pending_entries.append(("remove", path, previous, None))
                del self._durable[path]
            super().remove(path)

    def power_cut(self) -> None:
        with self._lock:
            self._die()
            for path, durable in self._durable.items():
                if path.exists():
                    path.write_bytes(self._tear(path.read_bytes(), durable))
            kept = self._rng.randint(0, len(self._pending_entries))
            for kind, path, previous, source in reversed(self._pending_entries[kept:]):
                if source is not None:  # a rename: the source comes back with the durable content it moved
                    source.write_bytes(path.read_bytes() if path.exists() else b"")
                if kind == "create" or previous is None:
                    path.unlink(missing_ok=True)
                else:
                    path.write_bytes(previous)

    def _tear(self, written: bytes, durable: bytes) -> bytes:
        shared = 0
        limit = min(len(written), len(durable))
        while shared < limit and written[shared] == durable[shared]:
            shared += 1
        if written == durable:
            return written
        rng = self._rng
        kind = rng.choice(TEARS)
        self.tears[kind] += 1
        kept, fresh = written[:shared], written[shared:]
        length = rng.randint(1, max(1, len(fresh)))
        if kind == "durable":
            return durable
        if kind == "cut":
            return kept
        if kind == "prefix":
            return kept + fresh[: rng.randint(0, len(fresh))]
        if kind == "zeros":
            return kept + bytes(length)
        if kind == "garbage":
            return kept + rng.randbytes(length)
        holes = bytearray(fresh)
        for start in range(0, len(holes), BLOCK):
            if rng.random() < 0.5:
                holes[start : start + BLOCK] = bytes(len(holes[start : start + BLOCK]))
        return kept + bytes(holes)
