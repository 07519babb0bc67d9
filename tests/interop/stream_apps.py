"""What the stream-processing application tests share: the app as a child process, its input, the expected output,
reading topics to their end, and the changelog checks.

The apps (`quix_app.py`, `faust_app.py`) do one job: for every keyed input `{"n": n}` they write
`{"seq": i, "sum": s}` to their output topic, i being the key's input count and s the sum of its values so far, kept
in a state store whose changelog topic the framework creates compacted.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import confluent_kafka.admin

from .clients import WAIT_S, until
from .served import ServedBroker

KEYS = 4


def apps_python(framework: str = "quixstreams") -> Path | None:
    """The interpreter the apps run with: .venv-apps's (`make test` builds it with the `apps` extra: quixstreams caps
    confluent-kafka below the version the tests use), else this one if it can import `framework`; None when neither
    has it."""
    built = Path(__file__).resolve().parents[2] / ".venv-apps" / "bin" / "python"
    if built.exists():
        return built
    try:
        importlib.import_module(framework)
    except ImportError:
        return None
    return Path(sys.executable)


SEGMENT_BYTES = 4096
# Small segments that roll by size, a cleaner that looks every 100 ms and cleans any dirt, and transaction markers
# (like tombstones) kept one second past their first cleaning rather than a day: the changelog is compacted while
# the app runs, and its size is bounded by its keys.
BROKER_ARGS = (
    "--fsync",
    "never",
    "--override",
    f"log.segment.bytes={SEGMENT_BYTES}",
    "--override",
    "log.cleaner.min.cleanable.ratio=0.01",
    "--override",
    "log.cleaner.backoff.ms=100",
    "--override",
    "log.cleaner.delete.retention.ms=1000",
)


@dataclass(frozen=True, slots=True)
class Topics:
    """The topics of one app: input, output, and the changelog its framework creates."""

    source: str
    sink: str
    changelog: str


class App:
    """An app script as a child process: `python SCRIPT BOOTSTRAP STATE_DIR GUARANTEE`."""

    def __init__(
        self,
        script: Path,
        broker: ServedBroker,
        state_dir: Path,
        guarantee: str,
        log_path: Path,
        framework: str = "quixstreams",
    ) -> None:
        self.script = script
        self.broker = broker
        self.state_dir = state_dir
        self.guarantee = guarantee
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        python = apps_python(framework)
        assert python is not None, f"no interpreter with {framework} (make test builds .venv-apps)"
        self.python = python

    def start(self) -> None:
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [str(self.python), "-u", str(self.script), self.broker.bootstrap, str(self.state_dir), self.guarantee],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self, signum: int = signal.SIGTERM) -> None:
        assert self.process is not None
        self.process.send_signal(signum)
        self.process.wait(WAIT_S)
        self.process = None

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def exit_code(self) -> int | None:
        """The exit status of the app started last, None while it runs (or when none was started)."""
        return None if self.process is None else self.process.poll()

    def log(self) -> str:
        return self.log_path.read_text()[-4000:]


def produce_numbers(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for n in range(first, first + count):
        producer.produce(topic, json.dumps({"n": n}).encode(), key=b"k%d" % (n % KEYS))
    assert producer.flush(WAIT_S) == 0


class Feeder:
    """Produces inputs `first .. first+count-1` in the background, a few at a time, so the app is always mid-work:
    chunks of 7 (never a multiple of the app's 20-input checkpoint) keep a transaction open most of the time."""

    CHUNK = 7
    PAUSE_S = 0.03

    def __init__(self, bootstrap: str, topic: str, first: int, count: int) -> None:
        self._args = (bootstrap, topic, first, count)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="feeder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        bootstrap, topic, first, count = self._args
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        try:
            for n in range(first, first + count):
                producer.produce(topic, json.dumps({"n": n}).encode(), key=b"k%d" % (n % KEYS))
                if (n - first) % self.CHUNK == self.CHUNK - 1:
                    assert producer.flush(WAIT_S) == 0
                    time.sleep(self.PAUSE_S)
            assert producer.flush(WAIT_S) == 0
        except BaseException as error:  # re-raised by join()
            self._failure = error

    def join(self) -> None:
        self._thread.join(WAIT_S * 4)
        assert not self._thread.is_alive(), "the feeder did not finish"
        if self._failure is not None:
            raise self._failure


def expected(total: int) -> dict[str, list[dict[str, int]]]:
    """The outputs per key for inputs 0 .. total-1, in order."""
    results: dict[str, list[dict[str, int]]] = {}
    for n in range(total):
        outputs = results.setdefault(f"k{n % KEYS}", [])
        outputs.append({"seq": len(outputs) + 1, "sum": (outputs[-1]["sum"] if outputs else 0) + n})
    return results


def read_topic(
    bootstrap: str, topic: str, isolation: str = "read_committed", enough: int | None = None
) -> list[confluent_kafka.Message]:
    """Every message of partition 0 of `topic` from the start to its end (the LSO for read_committed), or the first
    `enough` of them. The end is where a fetch comes back empty (librdkafka's PARTITION_EOF): while a producer keeps
    writing, every long poll is answered with new records and there is no end to reach, so a reader that only needs
    a count says `enough`."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    messages = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is None:
                messages.append(message)
                if enough is not None and len(messages) >= enough:
                    return messages
            elif error.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                return messages
            else:
                raise AssertionError(f"reading {topic}: {error}")
        raise AssertionError(f"{topic} not read to its end within {WAIT_S} s")
    finally:
        consumer.close()


def outputs(bootstrap: str, topic: str) -> dict[str, list[dict[str, int]]]:
    """The app's outputs per key, as a read_committed consumer sees them."""
    results: dict[str, list[dict[str, int]]] = {}
    for message in read_topic(bootstrap, topic):
        results.setdefault(message.key().decode(), []).append(json.loads(message.value()))
    return results


def wait_for_outputs(app: App, topic: str, count: int) -> None:
    """Until `topic` holds `count` committed outputs; an app that exits meanwhile fails the wait at once. A failure
    quotes the app's log and the tail of the broker's, as they are when it fails."""

    def done() -> bool:
        exited = app.exit_code()  # read before the count: an app that exits after its last output has not failed
        if len(read_topic(app.broker.bootstrap, topic, enough=count)) >= count:
            return True
        if exited is not None:
            raise AssertionError(f"the app exited with {exited} before {count} outputs; {logs()}")
        return False

    def logs() -> str:
        return f"app log:\n{app.log()}\nbroker log (its end):\n{app.broker.log()[-4000:]}"

    until(done, lambda: f"{count} outputs; {logs()}", lambda: time.sleep(0.3))


def topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    resource = confluent_kafka.admin.ConfigResource(confluent_kafka.admin.ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(WAIT_S)
    return {name: entry.value for name, entry in entries.items()}


def log_end(bootstrap: str, topic: str) -> int:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "end"})
    try:
        return int(consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), WAIT_S)[1])
    finally:
        consumer.close()


def segment_bytes(broker: ServedBroker, topic: str) -> int:
    return sum(path.stat().st_size for path in (broker.data_dir / f"{topic}-0").glob("*.log"))


def assert_compacted(broker: ServedBroker, changelog: str, state_keys: int) -> None:
    """Thousands of updates of `state_keys` keys stay a handful of records in a few segments once cleaned."""
    assert topic_config(broker.bootstrap, changelog)["cleanup.policy"] == "compact"
    end = log_end(broker.bootstrap, changelog)
    assert end > 500, f"the changelog saw many updates (end offset {end})"
    # Cleaned: the latest record per key, and the last marker of the app's producer. The active segment and the one
    # rolled last may still be dirty; nothing else may be left.
    until(
        lambda: segment_bytes(broker, changelog) <= 3 * SEGMENT_BYTES,
        lambda: f"the changelog to be cleaned ({segment_bytes(broker, changelog)} bytes)",
        lambda: time.sleep(0.2),
    )
    records = read_topic(broker.bootstrap, changelog)
    assert len({message.key() for message in records}) == state_keys
    assert len(records) < end // 4, f"{len(records)} of {end} changelog records left after cleaning"
