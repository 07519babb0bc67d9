"""The fuzzed broker: a real `kafkalite serve` child process on a free port, its log kept for the traceback check."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

READY = re.compile(r"KafkaLite ready on (?P<host>\S+):(?P<port>\d+)")
START_TIMEOUT_S = 60.0


class Target:
    """One running broker: where it listens, its process id and its log file."""

    def __init__(self, process: subprocess.Popen[str], port: int, log_path: Path) -> None:
        self.process = process
        self.host = "127.0.0.1"
        self.port = port
        self.log_path = log_path

    def rss_bytes(self) -> int:
        """The broker's resident memory now (Linux /proc)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def tracebacks(self) -> list[str]:
        """Log lines of unexpected errors: a refused request is logged in one line, a server bug with a traceback."""
        lines = self.log().splitlines()
        return [line for i, line in enumerate(lines) if "Traceback" in line or "unexpected error" in line]

    def alive(self) -> bool:
        return self.process.poll() is None


@contextlib.contextmanager
def served_broker(log_path: Path, *extra_args: str) -> Iterator[Target]:
    """Start `kafkalite serve --data-dir memory` on a free port; SIGTERM it (then kill) when done."""
    command = [sys.executable, "-m", "kafkalite", "serve", "--host", "127.0.0.1", "--port", "0"]
    command += ["--data-dir", "memory", "--fsync", "never", "--no-http", *extra_args]  # no fixed console port
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        port = _await_ready(process, log_path)
        yield Target(process, port, log_path)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def _await_ready(process: subprocess.Popen[str], log_path: Path) -> int:
    found: list[int] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:  # keep draining, so the child never blocks on a full pipe
            match = READY.search(line)
            if match and not found:
                found.append(int(match["port"]))
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(START_TIMEOUT_S):
        process.kill()
        raise RuntimeError(f"kafkalite serve did not start; log:\n{log_path.read_text()}")
    return found[0]
