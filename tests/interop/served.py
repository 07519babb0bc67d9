"""`kafkalite serve` as a child process: started on a free port, parsed from its ready line, stopped or killed.

The process is the real command a user runs (`python -m kafkalite.cli serve`), so these tests cover argument parsing,
the ready line, signal handling and recovery on restart. A restart reuses the first port, so clients that were
pointed at the old process find the new one.
"""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
READY = re.compile(
    r"^KafkaLite ready on (?P<host>\S+):(?P<port>\d+) \(data: (?P<data>.*), (?P<fsync>[^,]*)\)"
    r"(; console (?P<console>\S+))?$"
)


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafkalite.cli", "serve", *args]


class ServedBroker:
    """One `kafkalite serve` process at a time over `data_dir`; `extra_args` go on every command line.

    The console listener is off (`--no-http`) unless `extra_args` ask for it with `--http-port` (use 0: parallel
    test runs must never share a fixed port)."""

    def __init__(self, data_dir: Path, log_path: Path, *extra_args: str) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.extra_args = extra_args
        self.file_size_limit: int | None = None  # RLIMIT_FSIZE of the next start: no file of it grows past this
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.ready_line = ""
        self.console_url: str | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ServedBroker:
        """Start (or restart, on the same port) and wait for the ready line."""
        assert self.process is None or self.process.poll() is not None, "already running"
        http = () if "--http-port" in self.extra_args else ("--no-http",)
        command = serve_command(
            "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", str(self.data_dir), *http, *self.extra_args
        )
        if self.file_size_limit is not None:
            command = _with_file_size_limit(self.file_size_limit, command)
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_drain, args=(self.process, lines), daemon=True).start()
        try:
            self.ready_line = lines.get(timeout=START_TIMEOUT_S).rstrip("\n")
        except queue.Empty:
            self.kill()
            raise AssertionError(f"no ready line within {START_TIMEOUT_S} s; log:\n{self.log()}") from None
        ready = READY.match(self.ready_line)
        assert ready, f"unexpected ready line {self.ready_line!r}; log:\n{self.log()}"
        self.port = int(ready["port"])
        self.console_url = ready["console"]
        return self

    def stop(self, signum: int = signal.SIGTERM) -> int:
        """Send `signum` and wait for the exit status."""
        assert self.process is not None
        self.process.send_signal(signum)
        return self.process.wait(STOP_TIMEOUT_S)

    def kill(self) -> None:
        """kill -9 (a crash); a no-op when the process is already gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT_S)

    def restart(self) -> ServedBroker:
        if self.process is not None and self.process.poll() is None:
            assert self.stop() == 0, self.log()
        return self.start()

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


def _with_file_size_limit(limit: int, command: list[str]) -> list[str]:
    """`command`, exec'd by a Python that first sets RLIMIT_FSIZE to `limit` bytes: no write of the process grows a
    file past it (EFBIG, the failure a full disk gives as ENOSPC). A trampoline rather than `preexec_fn`, which is
    unsafe in a process with threads."""
    limit_then_exec = (
        "import os, resource, sys; "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1]))); "
        "os.execv(sys.argv[2], sys.argv[2:])"
    )
    return [sys.executable, "-c", limit_then_exec, str(limit), *command]


def _drain(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    """Keep reading stdout so the child never blocks on a full pipe; the first line is the ready line."""
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)
