"""What one `fdatasync` costs after an append, by how the file's space was reserved: the evidence for (not)
pre-allocating segment files.

    .venv/bin/python bench/fsync_probe.py [--dir DIR] [--appends 300] [--size 100] [--rounds 4]

For each kind of file, append `--size` bytes `--appends` times, `fdatasync` after each, and report the median
latency; the kinds alternate in order round by round (the disk is shared, so compare within a round):
- `growing`: a plain file that grows with each append (how segments are written);
- `keep_size`: space reserved ahead with `fallocate(FALLOC_FL_KEEP_SIZE)`: the size still grows per append;
- `fallocate`: space reserved with `posix_fallocate`, so the size is already final (a visible zero tail);
- `zeroed`: the whole file written with zeros and synced first (a visible zero tail, no unwritten extents).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import tempfile
import time

FALLOC_FL_KEEP_SIZE = 1
KINDS = ("growing", "keep_size", "fallocate", "zeroed")


def _reserve_keep_size(fd: int, length: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    if libc.fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, length) != 0:
        raise OSError(ctypes.get_errno(), "fallocate")


def median_fdatasync_us(directory: str, kind: str, appends: int, size: int) -> float:
    path = os.path.join(directory, kind)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    chunk = b"x" * size
    total = appends * size + 4096
    try:
        if kind == "keep_size":
            _reserve_keep_size(fd, total)
        elif kind == "fallocate":
            os.posix_fallocate(fd, 0, total)
        elif kind == "zeroed":
            os.pwrite(fd, bytes(total), 0)
        os.fsync(fd)
        times = []
        for n in range(appends):
            os.pwrite(fd, chunk, n * size)
            began = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - began)
    finally:
        os.close(fd)
        os.unlink(path)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", help="directory on the disk to measure (default: the temp directory)")
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(dir=args.dir, prefix="fsync-probe-")
    per_kind: dict[str, list[float]] = {kind: [] for kind in KINDS}
    try:
        for round_number in range(args.rounds):
            kinds = KINDS if round_number % 2 == 0 else tuple(reversed(KINDS))
            row = {kind: median_fdatasync_us(directory, kind, args.appends, args.size) for kind in kinds}
            for kind, value in row.items():
                per_kind[kind].append(value)
            print(f"round {round_number + 1}: " + ", ".join(f"{k} {v:.0f} µs" for k, v in row.items()), flush=True)
    finally:
        os.rmdir(directory)
    growing = statistics.median(per_kind["growing"])
    for kind in KINDS:
        median = statistics.median(per_kind[kind])
        print(f"{kind:>10}: median {median:.0f} µs ({median / growing:.2f}× growing)")


if __name__ == "__main__":
    main()
