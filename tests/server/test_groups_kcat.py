"""kcat's balanced consumer (`-G group topic`; Debian's build links librdkafka 2.0.x) against a served broker."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from groups_wire import WAIT_S

from kafkalite.groups import GroupDescription, decode_assignment
from kafkalite.server import ThreadedServer

pytestmark = [
    pytest.mark.interop,
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)"),
]

GROUP = "kcat-group"
TOPIC = "kcat-shared"


class BalancedKcat:
    """`kcat -G` in the background; every message it prints is collected as (partition, offset, value)."""

    def __init__(self, server: ThreadedServer, client_id: str, *extra: str) -> None:
        self.messages: list[tuple[int, int, str]] = []
        self.process = subprocess.Popen(
            [
                *("kcat", "-b", server.bootstrap, "-u", "-q", "-f", "%p %o %s\\n", "-X", f"client.id={client_id}"),
                *("-X", "session.timeout.ms=3000", "-X", "heartbeat.interval.ms=100"),
                *("-X", "auto.offset.reset=earliest", *extra, "-G", GROUP, TOPIC),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            partition, offset, value = line.split(maxsplit=2)
            self.messages.append((int(partition), int(offset), value.strip()))

    def stop(self) -> None:
        """SIGTERM: kcat closes its consumer, which commits its offsets and leaves the group."""
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(WAIT_S)
        self._reader.join(WAIT_S)


def produce(server: ThreadedServer, round_: int) -> None:
    """One message per partition, via kcat's producer."""
    for p in range(6):
        subprocess.run(
            ["kcat", "-b", server.bootstrap, "-P", "-t", TOPIC, "-p", str(p)],
            input=f"r{round_}-p{p}\n".encode(),
            check=True,
            timeout=WAIT_S,
        )


def group(server: ThreadedServer) -> GroupDescription:
    async def describe() -> GroupDescription:
        return server.broker.groups.describe(GROUP)

    result: GroupDescription = server.call(describe())
    return result


def owned(described: GroupDescription) -> list[list[int]]:
    return [sorted(p for _, p in decode_assignment(m.assignment).partitions) for m in described.members]


def committed(server: ThreadedServer) -> dict[int, int | None]:
    async def fetch() -> dict[int, int | None]:
        return {p: None if (c := server.broker.offsets.fetch(GROUP, TOPIC, p)) is None else c.offset for p in range(6)}

    result: dict[int, int | None] = server.call(fetch())
    return result


def wait_until(done: Callable[[], Any], what: str, *processes: BalancedKcat) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        for k in processes:
            assert k.process.poll() is None, f"kcat exited: {k.process.stderr.read() if k.process.stderr else ''}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_balanced_consumers_share_rebalance_commit_and_resume(threaded: ThreadedServer) -> None:
    threaded.call(threaded.broker.create_topic(TOPIC, 6))
    produce(threaded, 0)
    started = time.monotonic()
    a = BalancedKcat(threaded, "kcat-a")
    b = BalancedKcat(threaded, "kcat-b")
    try:
        wait_until(lambda: a.messages or b.messages, "the first message", a, b)
        print(f"\nkcat: start -> first message {time.monotonic() - started:.3f} s")

        def shared() -> bool:
            described = group(threaded)
            parts = owned(described)
            return (
                described.state == "Stable"
                and len(parts) == 2
                and all(parts)
                and sorted(p for ps in parts for p in ps) == [*range(6)]
            )

        wait_until(shared, "2 kcat consumers to share 6 partitions", a, b)
        assert sorted(m.client_id for m in group(threaded).members) == ["kcat-a", "kcat-b"]
        wait_until(lambda: {m[2] for m in a.messages + b.messages} >= {f"r0-p{p}" for p in range(6)}, "round 0", a, b)

        a.stop()
        wait_until(lambda: owned(group(threaded)) == [[*range(6)]], "kcat-b to own all 6 partitions", b)
        produce(threaded, 1)
        wait_until(lambda: {m[2] for m in b.messages} >= {f"r1-p{p}" for p in range(6)}, "round 1 at kcat-b", b)
    finally:
        a.stop()
        b.stop()
    assert group(threaded).state == "Empty"
    assert committed(threaded) == dict.fromkeys(range(6), 2)

    produce(threaded, 2)
    resumed = subprocess.run(
        [
            *("kcat", "-b", threaded.bootstrap, "-q", "-f", "%p %o %s\\n", "-c", "6"),
            *("-X", "auto.offset.reset=earliest", "-G", GROUP, TOPIC),
        ],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert sorted(resumed.stdout.splitlines()) == [f"{p} 2 r2-p{p}" for p in range(6)], resumed.stderr
