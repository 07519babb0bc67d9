"""Where a starting `kafkalite serve` waits, seen from outside: run it beside `python -m bench` (or anything that
starts brokers), then read its summary.

    .venv/bin/python -m bench.start_watch --out starts.jsonl    # in a second shell; Ctrl-C to stop
    .venv/bin/python -m bench.start_watch --summary starts.jsonl

Every 50 ms it looks for a new process whose command line runs `kafkalite serve` under a Python interpreter (a
process is looked at for its first second: until its `exec`, a fork shows its parent's command line). From
then until that process listens on the `--port` its command line names (at most 10 s), it reads the main thread's
state about every millisecond from /proc/<pid>/task/<pid>/stat. When the thread is not running it also reads what it
waits in: its kernel stack (/proc/<pid>/task/<pid>/stack, which needs root), its system call
(/proc/<pid>/task/<pid>/syscall) and, for a `read` or `getdents64`, the file behind the descriptor
(/proc/<pid>/fd/<fd>). For a page fault it names the mapping the faulting instruction lies in, which is not always
the file read (the dynamic loader's code takes the faults when it relocates a library). Times count from the spawn
(to the 10 ms clock tick of proc(5)); the first samples come up to 50 ms after it. One JSON line per start.

The summary gives, per start, the time in each state (R running or runnable, D waiting uninterruptibly, as for the
disk; S sleeping, as in the event loop's `epoll_wait`) and every wait of at least `--longer-than` milliseconds with
the kernel function at the top of its stack and the file. The sampler's own reads cost the watched broker nothing,
but the sampler takes CPU time while a broker starts, up to one core of a 2-core machine: use it to find where a
slow start waits, not to time one.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.machine import START_TIME, STATE, stat_fields

POLL_S = 0.05  # how often /proc is scanned for a new broker
SAMPLE_S = 0.001  # between two samples of a starting broker
WATCH_LIMIT_S = 10.0  # a start still not listening after this is left
EXEC_WITHIN_S = 1.0  # how long a new process is looked at again, in case it is a broker not yet exec'd
LISTEN_STATE = "0A"  # TCP_LISTEN in /proc/net/tcp
_READS_A_FILE = {"0", "17", "217"}  # x86-64 system call numbers of read, pread64 and getdents64


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the process was spawned
    state: str  # R, S, D, ... (proc(5))
    waits_in: str  # the kernel function at the top of the stack; "" while running
    file: str  # the file read or faulted on, if known; "" otherwise


def _read(path: str) -> str | None:
    try:
        with open(path) as file:
            return file.read()
    except OSError:  # the process ended, or the file needs more privilege
        return None


def _serve_port(pid: int) -> int | None:
    """The port of a `kafkalite serve` run by an interpreter, from its command line; None for anything else."""
    argv = (_read(f"/proc/{pid}/cmdline") or "").split("\0")
    if len(argv) < 3 or "python" not in Path(argv[0]).name or "serve" not in argv:
        return None
    if not any(Path(arg).name == "kafkalite" or arg == "kafkalite.cli" for arg in argv[1:3]):
        return None
    with contextlib.suppress(ValueError, IndexError):
        return int(argv[argv.index("--port") + 1])
    return None


def _listening(pid: int, port: int) -> bool:
    """Whether a socket listens on `port` in `pid`'s network namespace (any process's: the bench picks free ports)."""
    suffix = f":{port:04X}"
    for table in ("tcp", "tcp6"):
        for line in (_read(f"/proc/{pid}/net/{table}") or "").splitlines()[1:]:
            fields = line.split()  # sl, local address, remote address, state, ...
            if len(fields) > 3 and fields[1].endswith(suffix) and fields[3] == LISTEN_STATE:
                return True
    return False


def _mapping_of(pid: int, address: int) -> str:
    for line in (_read(f"/proc/{pid}/maps") or "").splitlines():
        fields = line.split()
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        if low <= address < high:
            return fields[5] if len(fields) > 5 else "anonymous memory"
    return ""


def _waited_on(pid: int, stack: list[str]) -> str:
    """The file the main thread of `pid` waits to read, if its system call or its page fault names one."""
    call = (_read(f"/proc/{pid}/task/{pid}/syscall") or "").split()
    if len(call) > 1 and call[0] in _READS_A_FILE:
        with contextlib.suppress(OSError, ValueError):
            return os.readlink(f"/proc/{pid}/fd/{int(call[1], 16)}")
    if len(call) > 2 and call[0] == "-1" and any("page_fault" in frame for frame in stack):
        with contextlib.suppress(ValueError):
            # The instruction's address, not the faulting page's: the loader's code shows up when it relocates a
            # library it maps, so this names where the fault was taken, not always the file read.
            return "page fault, instruction in " + _mapping_of(pid, int(call[2], 16))
    return ""


def _age(pid: int) -> float:
    """Seconds since `pid` was spawned (its start time in proc(5), in clock ticks since boot: 10 ms steps)."""
    try:
        started = int(stat_fields(Path(f"/proc/{pid}/stat"))[START_TIME]) / os.sysconf("SC_CLK_TCK")
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except OSError:
        return 0.0
    return max(0.0, uptime - started)


def _sample(pid: int, began: float) -> Sample | None:
    try:
        state = stat_fields(Path(f"/proc/{pid}/task/{pid}/stat"))[STATE]
    except OSError:  # the process has ended
        return None
    at = time.perf_counter() - began
    if state == "R":
        return Sample(at, state, "", "")
    stack = [line.split()[1].split("+")[0] for line in (_read(f"/proc/{pid}/task/{pid}/stack") or "").splitlines()]
    return Sample(at, state, stack[0] if stack else "", _waited_on(pid, stack))


def watch_start(pid: int, port: int) -> Iterator[Sample]:
    """Samples of `pid`'s main thread until it listens on `port`, ends, or `WATCH_LIMIT_S` passes; their times count
    from the spawn, to the clock tick."""
    began = time.perf_counter() - _age(pid)
    count = 0
    while time.perf_counter() - began < WATCH_LIMIT_S:
        sample = _sample(pid, began)
        if sample is None:
            return
        yield sample
        count += 1
        if count % 10 == 0 and _listening(pid, port):
            return
        time.sleep(SAMPLE_S)


def _pids() -> set[int]:
    return {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}


def watch(out: Path) -> None:
    seen = _pids()
    young: dict[int, float] = {}  # new processes not (yet) a broker: a fork shows its parent's command until exec
    with out.open("a") as lines:
        while True:
            now = _pids()
            checked = time.perf_counter()
            young = {pid: since for pid, since in young.items() if pid in now and checked - since < EXEC_WITHIN_S}
            young |= {pid: checked for pid in now - seen}
            for pid in sorted(young):
                if (port := _serve_port(pid)) is None:
                    continue
                del young[pid]
                command = (_read(f"/proc/{pid}/cmdline") or "").replace("\0", " ").strip()
                found = time.time()
                samples = [asdict(sample) for sample in watch_start(pid, port)]
                record = {"pid": pid, "command": command, "found": found, "samples": samples}
                lines.write(json.dumps(record) + "\n")
                lines.flush()
            seen = now
            time.sleep(POLL_S)


@dataclass(frozen=True)
class Wait:
    began: float
    seconds: float
    state: str
    waits_in: str
    file: str


def waits(samples: list[Sample]) -> list[Wait]:
    """Runs of samples in one not-running state, in one kernel function, on one file; each lasts until the next
    different sample, so a run still going at the last sample, which has no end, is left out."""
    found: list[Wait] = []
    start = 0
    for index in range(1, len(samples) + 1):
        first = samples[start]
        key = (first.state, first.waits_in, first.file)
        if index < len(samples) and (samples[index].state, samples[index].waits_in, samples[index].file) == key:
            continue
        if first.state != "R" and index < len(samples):
            found.append(Wait(first.at, samples[index].at - first.at, first.state, first.waits_in, first.file))
        start = index
    return found


def summary(path: Path, longer_than_ms: float) -> None:
    for line in path.read_text().splitlines():
        record = json.loads(line)
        samples = [Sample(**sample) for sample in record["samples"]]
        if len(samples) < 2:
            continue
        when = time.strftime("%H:%M:%S", time.gmtime(record["found"]))
        print(f"{when} UTC pid {record['pid']}: {samples[-1].at:.3f} s watched, {len(samples)} samples")
        print(f"  {record['command']}")
        spent: defaultdict[str, float] = defaultdict(float)
        for sample, following in itertools.pairwise(samples):
            spent[sample.state] += following.at - sample.at
        print("  " + ", ".join(f"{state} {seconds:.3f} s" for state, seconds in sorted(spent.items())))
        for wait in waits(samples):
            if wait.seconds * 1000 >= longer_than_ms:
                where = wait.file or "(no file)"
                waited = f"{wait.state} {wait.seconds * 1000:.1f} ms in {wait.waits_in or '(stack not read)'}"
                print(f"    at {wait.began:.3f} s: {waited}: {where}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.start_watch", description=__doc__.split("\n\n")[0])
    task = parser.add_mutually_exclusive_group(required=True)
    task.add_argument("--out", type=Path, help="watch, appending one JSON line per start to this file")
    task.add_argument("--summary", type=Path, help="summarise a file written by --out")
    parser.add_argument("--longer-than", type=float, default=5.0, help="waits listed (ms; default 5)")
    args = parser.parse_args(argv)
    if args.out is not None:
        if not sys.platform.startswith("linux"):
            parser.error("reads Linux's /proc")
        with contextlib.suppress(KeyboardInterrupt):
            watch(args.out)
    else:
        summary(args.summary, args.longer_than)


if __name__ == "__main__":
    main()
