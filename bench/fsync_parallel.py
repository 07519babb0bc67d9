"""What the disk does with the syncs of several files at once: `fdatasync` one after another (as the fsync thread runs
a batch, `storage/group_commit.py`), `fdatasync` on all of them at the same time from as many threads, or one Linux
`syncfs` of their filesystem (measured, not used by the broker: see `docs/benchmarks.md`, "One
`syncfs` for a batch of partitions: built, measured, not kept").

    .venv/bin/python -m bench.fsync_parallel [--dir DIR] [--files 8] [--chunk 60000] [--seconds 3] [--rounds 3]

Each round runs the forms in turn for `--seconds` each (the order rotates by round; the disk is shared, so compare
within a round). A step appends `--chunk` bytes to each of `--files` growing files (60,000: what one sync round of each
of 8 partitions covers near 460,000 msg/s of 100 B records; 200: one small Produce request's records per partition)
and then syncs every file: `serial` calls `fdatasync` on each in turn, `parallel` on all at once from a thread each
and waits for all, `syncfs` makes one `syncfs(2)` call (through ctypes; the form is left out where the C library
has none). Printed: steps a second, the median time of a step's syncs, and the bytes a second made durable. Pure disk
and kernel: no broker and no event loop, so it says what each form could buy at most, not what it buys a broker whose
threads share one interpreter lock.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def _syncfs() -> Callable[[int], int] | None:
    """The C library's `syncfs`, or None where there is none."""
    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return None
    call.argtypes, call.restype = [ctypes.c_int], ctypes.c_int
    return call  # type: ignore[no-any-return]


SYNCFS = _syncfs()
FORMS = ("serial", "parallel", "syncfs")


def run(directory: str, files: int, chunk: int, seconds: float, form: str) -> tuple[float, float, float]:
    """(steps a second, median sync time of a step in ms, MB a second made durable) for one form."""
    fds = [os.open(os.path.join(directory, f"f{n}"), os.O_RDWR | os.O_CREAT | os.O_TRUNC) for n in range(files)]
    data = b"x" * chunk
    written = 0
    sync_times: list[float] = []
    pool = ThreadPoolExecutor(files, thread_name_prefix="fsync-parallel") if form == "parallel" else None
    try:
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            for fd in fds:
                os.pwrite(fd, data, written // files)
            written += chunk * files
            started = time.perf_counter()
            if pool is not None:
                list(pool.map(os.fdatasync, fds))
            elif form == "syncfs":
                assert SYNCFS is not None
                if SYNCFS(fds[0]) != 0:
                    raise OSError(ctypes.get_errno(), "syncfs failed")
            else:
                for fd in fds:
                    os.fdatasync(fd)
            sync_times.append(time.perf_counter() - started)
        elapsed = time.perf_counter() - began
    finally:
        if pool is not None:
            pool.shutdown()
        for n, fd in enumerate(fds):
            os.close(fd)
            os.unlink(os.path.join(directory, f"f{n}"))
    return len(sync_times) / elapsed, statistics.median(sync_times) * 1e3, written / elapsed / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", help="directory on the disk to measure (default: the temp directory)")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=60_000, help="bytes appended to each file per step")
    parser.add_argument("--seconds", type=float, default=3.0, help="per form and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(dir=args.dir, prefix="fsync-parallel-")
    forms = FORMS if SYNCFS is not None else FORMS[:2]
    steps: dict[str, list[float]] = {form: [] for form in forms}
    try:
        for round_number in range(args.rounds):
            shift = round_number % len(forms)
            for form in forms[shift:] + forms[:shift]:
                rate, median_ms, mb_s = run(directory, args.files, args.chunk, args.seconds, form)
                steps[form].append(rate)
                print(
                    f"round {round_number + 1} {form:>8}: {rate:,.0f} steps/s of {args.files} files, "
                    f"syncs of a step {median_ms:.2f} ms (median), {mb_s:,.0f} MB/s durable",
                    flush=True,
                )
    finally:
        os.rmdir(directory)
    serial = statistics.median(steps["serial"])
    medians = ", ".join(
        f"{form} {statistics.median(rates):,.0f} ({statistics.median(rates) / serial:.2f}×)"
        for form, rates in steps.items()
    )
    print(f"median steps/s (× serial): {medians}")


if __name__ == "__main__":
    main()
