"""`kafkalite serve` start-up time and idle memory, cold and warm, against the bare interpreter in the same run.

    python bench/startup_bench.py [--rounds 5] [--settle 1.0] [--baseline COMMIT]

Subjects, started in turn every round (A B C D, A B C D, ...) so machine load hits them alike:

- `python -c pass`: the interpreter's own floor on this machine at this moment;
- `serve, warm`: `kafkalite serve --port 0 --data-dir memory --no-http` with KafkaLite's modules byte-compiled, as
  every start of a pip-installed copy (pip compiles on install) and of a `make`-installed checkout runs;
- `serve, cold`: the same with no bytecode for KafkaLite's modules and none written (`PYTHONDONTWRITEBYTECODE=1`):
  what the very first start of an uncompiled source tree costs, and every start when bytecode cannot be written;
- `serve + console, warm`: the default `kafkalite serve` (web console and /metrics on a free port). The console
  loads on its first connection, so after the idle RSS this subject also times its first page (a GET of the console's
  front page, from the request to the whole answer) and reads the RSS after it;
- with `--baseline COMMIT`, the same three for `src/kafkalite` as of that commit (`git archive`, with this tree's
  compiled extensions, which it uses only if its compiled modules' sources are unchanged), in the same rounds.

The two bytecode states are two copies of the package under test in a temporary directory, put first on
`PYTHONPATH` (one compiled with `compileall`, one never compiled), so the bench leaves the source tree alone. Third
party packages and the standard library keep the bytecode their installers wrote, as in a user's environment.

Figures per subject: spawn → the ready line on stdout (wall, s), the process's CPU time (user + system) at that
moment, its RSS after `--settle` seconds idle, and for the console subject its first page (s) and the RSS after it.
Medians over the rounds, with min–max.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SERVE = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", "memory"]


@dataclass(frozen=True)
class Subject:
    name: str
    argv: list[str]
    env: dict[str, str]
    ready: str | None  # the stdout line prefix that means "started"; None: the process exit does
    console: bool = False  # its ready line names a console: time the first page


@dataclass(frozen=True)
class Sample:
    wall_s: float
    cpu_s: float
    rss_mb: float | None
    first_page_s: float | None = None
    rss_after_page_mb: float | None = None


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14 and 15 of proc(5))


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def one_run(subject: Subject, settle_s: float) -> Sample:
    began = time.perf_counter()
    if subject.ready is None:
        before = os.times()
        subprocess.run(subject.argv, env=subject.env, check=True)
        after = os.times()
        cpu = after.children_user + after.children_system - before.children_user - before.children_system
        return Sample(time.perf_counter() - began, cpu, None)
    process = subprocess.Popen(
        subject.argv, env=subject.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        wall = time.perf_counter() - began
        if not line.startswith(subject.ready):
            raise SystemExit(f"{subject.name}: expected {subject.ready!r}, got {line!r}")
        cpu = _cpu_s(process.pid)
        time.sleep(settle_s)
        idle = _rss_mb(process.pid)
        if not subject.console:
            return Sample(wall, cpu, idle)
        url = line.rsplit("; console ", 1)[1].strip()
        asked = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as answer:
            answer.read()
        return Sample(wall, cpu, idle, time.perf_counter() - asked, _rss_mb(process.pid))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def _package_under_test() -> Path:
    spec = importlib.util.find_spec("kafkalite")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("kafkalite is not importable from this interpreter")
    return Path(next(iter(spec.submodule_search_locations)))


def _package_at(commit: str, root: Path, compiled_from: Path) -> Path:
    """`src/kafkalite` as it was at `commit` of this repository (`git archive`), unpacked under `root`, with the
    compiled extensions of `compiled_from` and their record of sources copied in. Those are used only where the
    commit's sources match the record (`kafkalite.protocol.native`), so a commit that changed no compiled module is
    measured compiled, as installed, and one that did is measured as Python (`_compiled_or_why_not` says which)."""
    root.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, "src/kafkalite"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    package = root / "src" / "kafkalite"
    for built in [*compiled_from.rglob("*.so"), *compiled_from.rglob("_native.sources")]:
        target = package / built.relative_to(compiled_from)
        if target.parent.is_dir():
            shutil.copy2(built, target)
    return package


def _compiled_or_why_not(package: Path) -> str:
    """Whether `package` (a copy on PYTHONPATH) runs its compiled modules, as `kafkalite.protocol.native` decides."""
    check = "from kafkalite.protocol import native; print(native.status().not_used_because or 'compiled')"
    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    return subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True).stdout.strip()


def _copies(package: Path, root: Path) -> tuple[Path, Path]:
    """(warm, cold): two copies of `package`; only the warm one is byte-compiled."""
    warm, cold = root / "warm", root / "cold"
    for where in (warm, cold):
        shutil.copytree(package, where / "kafkalite", ignore=shutil.ignore_patterns("__pycache__"))
    if not compileall.compile_dir(warm, quiet=1):
        raise SystemExit("compileall failed")
    return warm, cold


def subjects(warm: Path, cold: Path, suffix: str = "") -> list[Subject]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    command = Path(sys.executable).with_name("kafkalite")
    kafkalite = [str(command)] if command.exists() else [sys.executable, "-m", "kafkalite"]
    warm_env = {**base, "PYTHONPATH": str(warm), "PYTHONDONTWRITEBYTECODE": "1"}
    cold_env = {**base, "PYTHONPATH": str(cold), "PYTHONDONTWRITEBYTECODE": "1"}
    ready = "KafkaLite ready on"
    return [
        Subject(f"serve, warm{suffix}", [*kafkalite, *SERVE, "--no-http"], warm_env, ready),
        Subject(f"serve, cold{suffix}", [*kafkalite, *SERVE, "--no-http"], cold_env, ready),
        Subject(f"serve + console, warm{suffix}", [*kafkalite, *SERVE, "--http-port", "0"], warm_env, ready, True),
    ]


def _summary(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--settle", type=float, default=1.0, help="seconds idle before RSS is read")
    parser.add_argument("--baseline", metavar="COMMIT", help="also measure src/kafkalite as of this commit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        floor = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        runs = [Subject("python -c pass", [sys.executable, "-c", "pass"], floor, None)]
        package = _package_under_test()
        runs += subjects(*_copies(package, Path(root) / "this"))
        if args.baseline:
            baseline = _package_at(args.baseline, Path(root) / "archive", package)
            runs += subjects(*_copies(baseline, Path(root) / "baseline"), f" ({args.baseline})")
            print(f"{args.baseline}: {_compiled_or_why_not(baseline)}; this tree: {_compiled_or_why_not(package)}")
        samples: dict[str, list[Sample]] = {s.name: [] for s in runs}
        for _ in range(args.rounds):
            for subject in runs:
                samples[subject.name].append(one_run(subject, args.settle))
    print(f"rounds: {args.rounds}, alternating; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| subject | spawn → ready (s) | CPU at ready (s) | idle RSS (MB) | first page (s) | RSS after it (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, taken in samples.items():
        rss = [s.rss_mb for s in taken if s.rss_mb is not None]
        page = [s.first_page_s for s in taken if s.first_page_s is not None]
        after = [s.rss_after_page_mb for s in taken if s.rss_after_page_mb is not None]
        print(
            f"| {name} | {_summary([s.wall_s for s in taken], 3)} | {_summary([s.cpu_s for s in taken], 2)} | "
            f"{_summary(rss, 1) if rss else '—'} | {_summary(page, 3) if page else '—'} | "
            f"{_summary(after, 1) if after else '—'} |"
        )


if __name__ == "__main__":
    main()
