"""`kafkalite serve` as a process: the ready line, --help, a busy port, and SIGTERM/SIGINT finishing in-flight work."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.fetch import FetchRequest

from .conftest import THROWAWAY, Serve
from .served import READY, serve_command

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

LONG_POLL_MS = 3000


def test_help() -> None:
    done = subprocess.run(serve_command("--help"), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    for option in ("--host", "--port", "--advertised-host", "--data-dir", "--fsync", "--log-level", "--log-file"):
        assert option in done.stdout


def test_ready_line_names_the_port_and_data_dir(serve: Serve) -> None:
    broker = serve(*THROWAWAY)
    ready = READY.match(broker.ready_line)
    assert ready is not None
    assert ready["host"] == "127.0.0.1"
    assert int(ready["port"]) > 0
    assert ready["data"] == str(broker.data_dir)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10):
        pass


def test_busy_port_exits_non_zero_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            serve_command("--host", "127.0.0.1", "--port", str(port), "--data-dir", "memory", "--no-http"),
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if not READY.match(line) and " | " not in line]
    assert len(errors) == 1, done.stderr
    assert str(port) in errors[0]
    assert "Traceback" not in done.stderr


def test_a_second_broker_over_a_data_directory_in_use_exits_non_zero_with_one_line(serve: Serve) -> None:
    """Kafka's lock on its log directory: two brokers over one directory would overwrite each other's records. The
    first keeps serving; once it is killed with -9, the directory is free again."""
    first = serve(*THROWAWAY)
    assert first.process is not None
    done = subprocess.run(
        serve_command("--host", "127.0.0.1", "--port", "0", "--data-dir", str(first.data_dir), "--no-http"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if " | " not in line]
    assert errors == [
        f"kafkalite: data directory {first.data_dir} is in use by another broker (process {first.process.pid}); "
        "stop it first, or use another directory"
    ], done.stderr
    with socket.create_connection(("127.0.0.1", first.port), timeout=10):  # the first one still serves
        pass
    first.kill()
    assert serve(*THROWAWAY, data_dir=first.data_dir).port > 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_finishes_in_flight_request_then_exits_0(serve: Serve, signum: int) -> None:
    broker = serve(*THROWAWAY)

    async def long_poll_across_the_signal() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait("in-flight", b"first", partition=0)
        finally:
            await producer.stop()
        client = AIOKafkaClient(bootstrap_servers=broker.bootstrap)
        await client.bootstrap()
        try:
            [node] = client.cluster.brokers()
            await client.ready(node.nodeId)
            fetch = FetchRequest(LONG_POLL_MS, 1, 1 << 20, 0, [("in-flight", [(0, 1, 1 << 20)])])
            started = time.monotonic()
            waiting = asyncio.create_task(client.send(node.nodeId, fetch))
            await asyncio.sleep(0.5)  # the Fetch is parked in the broker's long poll
            broker.process.send_signal(signum)
            response = await asyncio.wait_for(waiting, 20)
            [(topic, [partition])] = [(t[0], t[1]) for t in response.topics]
            assert topic == "in-flight"
            assert partition[1] == 0, f"error code {partition[1]}"
            return time.monotonic() - started
        finally:
            await client.close()

    elapsed = asyncio.run(long_poll_across_the_signal())
    assert broker.process.wait(30) == 0, broker.log()
    assert elapsed < LONG_POLL_MS / 1000 + 5
    assert "Stopped listening" in broker.log()
