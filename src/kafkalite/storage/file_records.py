"""`FileRecords`: whole stored batches as a byte range of a segment's `.log`, sent to a socket without copying them.

Kafka serves consumers with `sendfile`: the Fetch answer's framing is written normally and the record bytes go from
the page cache to the socket inside the kernel. A `FileRecords` is what makes that possible here: a descriptor of our
own on the segment's `.log` (a `dup` of the segment's, so it shares the open file, not the name), a position and a
length, taken by `Segment.read_file_records` on the event loop under the same rules as `Segment.read` (whole batches
from the one holding the offset, at least one, never past the segment's valid `size`).

What it holds, and why that is enough (the cases a fetch can race with, all on the event loop):
  * **Retention, DeleteRecords, topic deletion, the log cleaner's swap** unlink segment files (or rename them away)
    and write new files under new inodes. An open descriptor keeps the unlinked inode's data readable, exactly as
    Kafka's open `FileChannel` does, so the answer still carries the bytes it promised; the space is freed when the
    last descriptor closes.
  * **Truncation** (`Segment._cut`, the only in-place change of a `.log` that bytes were read from) shortens the same
    inode, and appends after it would overwrite the range with other batches. So a segment tracks the `FileRecords`
    it handed out that are not sent yet, and before it cuts, each one reaching past the cut is `preserve`d: its
    unsent bytes are read into memory while they are still the ones promised, and the sender sends those instead.
    Truncation and sending both run on the event loop, so nothing falls between the check and the send. Bytes
    already passed to `sendfile` are another matter: the socket holds references to the page-cache pages, not
    copies, until the client reads them, and a cut zeroes the page it falls in, in place. When a cut falls inside
    bytes already passed on, the segment moves its kept bytes to a new file instead (`Segment._move_to_copy`), and
    the old file, unlinked and still open by the ranges, is never written again.
  * **Appends** only write past `size`, outside every range handed out.

Lifetime: the descriptor is closed by `close` (the sender calls it once the bytes are out, or the connection drops
them), and by a `weakref.finalize` should an answer be dropped without it, so a lost answer never leaks a descriptor.

Below `ZERO_COPY_MIN_BYTES` a read returns `bytes` instead: a `dup`, a separate `sendfile` call and a `close` cost
more than copying a few kilobytes, and small answers are the latency-bound ones.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

from kafkalite.storage.file_ops import FileOps

ZERO_COPY_MIN_BYTES = 16 * 1024
TRUNCATED_SUFFIX = ".truncated"  # (transient) a segment's kept bytes copied aside by a cut under a zero-copy send


class FileRecords:
    """`size` bytes of a `.log` from `position`, on descriptor `fd` (ours); see the module docstring.

    `sent` counts the bytes a sender has handed to the socket so far; `preserved` holds the unsent rest once the file
    was cut under it (then `fd` is no longer read).
    """

    __slots__ = ("__weakref__", "_close", "_release", "fd", "position", "preserved", "sent", "size")

    def __init__(self, fd: int, position: int, size: int, release: Callable[[FileRecords], None]) -> None:
        self.fd = fd
        self.position = position
        self.size = size
        self.sent = 0
        self.preserved: bytes | None = None
        self._release = release
        self._close = weakref.finalize(self, os.close, fd)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"FileRecords(fd={self.fd}, position={self.position}, size={self.size}, sent={self.sent})"

    @property
    def closed(self) -> bool:
        return not self._close.alive

    def reaches_past(self, position: int) -> bool:
        """Whether bytes not yet sent lie at or after `position` of the file (a cut there would change them)."""
        return self.preserved is None and self.position + self.size > position

    def passed_to_kernel_past(self, position: int) -> bool:
        """Whether bytes at or after `position` of the file were already passed to `sendfile` (the socket may still
        hold references to their pages)."""
        return self.preserved is None and self.position + self.sent > position

    def preserve(self) -> None:
        """Read the unsent bytes into memory now, before the file under them changes (see the module docstring)."""
        if self.preserved is None and not self.closed:
            self.preserved = self._pread_exactly(self.position + self.sent, self.size - self.sent)

    def unsent_bytes(self) -> bytes:
        """The bytes not sent yet, copied (the path for transports that cannot `sendfile`, such as TLS)."""
        if self.preserved is not None:
            return self.preserved
        return self._pread_exactly(self.position + self.sent, self.size - self.sent)

    def advance(self, count: int) -> None:
        """`count` more bytes reached the socket; a preserved remainder shrinks with them."""
        self.sent += count
        if self.preserved is not None:
            self.preserved = self.preserved[count:]

    def close(self) -> None:
        """Release the descriptor (idempotent) and stop being tracked by the segment."""
        if self._close.alive:
            self._close()
            self._release(self)

    def _pread_exactly(self, position: int, size: int) -> bytes:
        data = os.pread(self.fd, size, position)
        if len(data) != size:  # only a cut we were not told about could do this: refuse to send other bytes
            raise OSError(f"short read of stored batches: {len(data)} of {size} bytes at {position}")
        return data


class HandedOut:
    """The ranges of one segment's `.log` handed out and not released yet, and what a cut does about them."""

    __slots__ = ("_ranges",)

    def __init__(self) -> None:
        self._ranges: weakref.WeakSet[FileRecords] = weakref.WeakSet()

    def __iter__(self) -> Iterator[FileRecords]:
        return iter(list(self._ranges))

    def open(self, fd: int, position: int, size: int) -> FileRecords:
        """A new range on `fd` (a descriptor of the caller's, owned by the range from now on)."""
        records = FileRecords(fd, position, size, self._ranges.discard)
        self._ranges.add(records)
        return records

    def before_cut(self, position: int) -> bool:
        """Called before the file is cut at `position`; True when the segment must move to a copy of its kept bytes.

        A range whose unsent bytes reach past the cut reads them into memory now (`FileRecords.preserve`). Bytes a
        sender already passed to `sendfile` cannot be taken back: the socket holds references to the page-cache
        pages, not copies, until the client reads them, and cutting a page in place (then appending into it) would
        change what is still queued. So when any range has passed on bytes at or after the cut, the answer is True:
        the segment continues in a new file (`copy_prefix_aside`) and the old one, unlinked and still open by the
        ranges, never changes again. Bytes before the cut never change in place either way. Raises `OSError`.
        """
        reaching = [records for records in self._ranges if records.reaches_past(position)]
        if any(records.passed_to_kernel_past(position) for records in reaching):
            return True
        for records in reaching:
            records.preserve()
        return False


def copy_prefix_aside(ops: FileOps, source_fd: int, path: Path, keep: int) -> int:
    """Write the first `keep` bytes of `source_fd` to `<path>.truncated`, fsync it, rename it over `path`, fsync the
    directory; return the new file's descriptor (open for reading and writing). Raises `OSError`, leaving `path` as
    it was (a leftover `.truncated` file is removed by the next open of the partition)."""
    temp = path.with_name(path.name + TRUNCATED_SUFFIX)
    fd = ops.open(temp, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        copied = 0
        while copied < keep:
            step = ops.copy_range(source_fd, fd, copied, keep - copied)
            if step <= 0:
                raise OSError(f"copied {copied} of {keep} bytes of {path}")
            copied += step
        ops.fsync(fd)  # the kept bytes were durable in the old file: they must be in the new one before it replaces it
        ops.rename(temp, path)
        ops.fsync_directory(path.parent)
    except BaseException:
        ops.close(fd)
        try:
            ops.remove(temp)
        except OSError:
            pass
        raise
    return fd
