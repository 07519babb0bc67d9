"""`kafkalite migrate` from KafkaLite to Tansu: topics, configs, records (keys, headers, timestamps, compressed
batches, nulls), group positions; an interrupted migration resumed; `--verify` catching an altered target.

The source is `kafkalite serve` in this process; the target a fresh Tansu per test. Records are compared field by
field with confluent-kafka reading both clusters, and group positions by resuming a consumer of each group on Tansu.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

from kafkalite.admin import ClientSettings
from kafkalite.admin.consume import learn_leaders, take_batch
from kafkalite.migrate import GroupResult, MigrationOptions, PartitionCheck, TopicPlan, TopicProgress, migrate
from kafkalite.server import run_in_thread

from .conftest import ClusterUnderTest, run_cli, tansu

pytestmark = pytest.mark.interop

Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]
BASE_MS = 1_760_000_000_000


@pytest.fixture
def source() -> Iterator[ClusterUnderTest]:
    with run_in_thread() as server:
        yield ClusterUnderTest("kafkalite", server.bootstrap)


@pytest.fixture
def target() -> Iterator[ClusterUnderTest]:
    with tansu() as cluster:
        yield cluster


def produce(bootstrap: str, topic: str, records: list[tuple[int | None, Record]], **config: Any) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **config})
    for partition, (key, value, headers, timestamp) in records:
        options: dict[str, Any] = {"timestamp": timestamp, "headers": headers}
        if partition is not None:
            options["partition"] = partition
        while True:
            try:
                producer.produce(topic, value, key, **options)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def read_partitions(
    bootstrap: str, topic: str, partitions: Sequence[int], group: str = "test-reader", stored: bool = False
) -> dict[int, list[Record]]:
    """Every record of each partition to its end: from the start, or (`stored`) from `group`'s committed offsets."""
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 10,
    }
    consumer = confluent_kafka.Consumer({**settings, "enable.auto.commit": False, "auto.offset.reset": "error"})
    learn_leaders(consumer, topic, 10)
    start = confluent_kafka.OFFSET_STORED if stored else confluent_kafka.OFFSET_BEGINNING
    consumer.assign([confluent_kafka.TopicPartition(topic, p, start) for p in partitions])
    records: dict[int, list[Record]] = {p: [] for p in partitions}
    open_partitions = set(partitions)
    deadline = time.monotonic() + 60
    try:
        while open_partitions:
            assert time.monotonic() < deadline, f"no end of {topic} {sorted(open_partitions)} within 60 s"
            for message in take_batch(consumer, 1000, 1.0):
                error = message.error()
                partition = message.partition() or 0
                if error is not None:
                    assert error.code() == confluent_kafka.KafkaError._PARTITION_EOF, error
                    open_partitions.discard(partition)
                    continue
                _, timestamp = message.timestamp()
                records[partition].append((message.key(), message.value(), list(message.headers() or []), timestamp))
    finally:
        consumer.close()
    return records


def read_all(bootstrap: str, topic: str, partition: int) -> list[Record]:
    return read_partitions(bootstrap, topic, range(partition, partition + 1))[partition]


def resume_group(bootstrap: str, group: str, topic: str, partitions: Sequence[int]) -> dict[int, list[Record]]:
    """What a consumer of `group` reads next from each partition: from the group's committed offset to the end."""
    return read_partitions(bootstrap, topic, partitions, group, stored=True)


def commit_after(bootstrap: str, group: str, topic: str, partition: int, offset: int) -> None:
    """`group` consumes `topic[partition]` through `offset - 1` and commits, as an application would."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, partition, 0)])
    seen = 0
    while seen < offset:
        message = consumer.poll(10)
        assert message is not None
        assert message.error() is None
        seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()


ORDERS_PARTITIONS = 3


def order(i: int) -> Record:
    headers: list[tuple[str, bytes | None]] = [("source", b"web"), ("n", str(i).encode())]
    return f"customer-{i % 7}".encode(), f"order {i}".encode() * (1 + i % 5), headers, BASE_MS + i


def seed(source: ClusterUnderTest) -> dict[str, dict[int, int]]:
    """Topics `orders` (3 partitions, keyed, lz4 batches, a config), `audit` (1 partition, gzip, nulls, tombstones)
    and `empty`; groups `billing` and `fulfillment` with committed offsets. Returns group → partition → offset."""
    source.ok("topics", "create", "orders", "-p", str(ORDERS_PARTITIONS), "-c", "retention.ms=604800000")
    source.ok("topics", "create", "audit", "-p", "1")
    source.ok("topics", "create", "empty", "-p", "2")
    orders = [(None, order(i)) for i in range(600)]
    produce(source.bootstrap, "orders", orders, **{"compression.type": "lz4"})
    audit = [
        (0, (None if i % 3 == 0 else f"k{i}".encode(), None if i % 10 == 9 else f"event {i}".encode(),
             [("empty", None)] if i % 4 == 0 else [], BASE_MS + 10_000 + i))
        for i in range(150)
    ]  # fmt: skip
    produce(source.bootstrap, "audit", audit, **{"compression.type": "gzip"})
    positions = {"billing": {0: 40, 1: 0, 2: 25}, "fulfillment": {0: 3, 1: 17, 2: 60}}
    for group, offsets in positions.items():
        for partition, offset in offsets.items():
            if offset:
                commit_after(source.bootstrap, group, "orders", partition, offset)
    commit_after(source.bootstrap, "fulfillment", "audit", 0, 99)
    return positions


def assert_same_records(source: ClusterUnderTest, target: ClusterUnderTest) -> None:
    for topic, partitions in (("orders", ORDERS_PARTITIONS), ("audit", 1), ("empty", 2)):
        expected = read_partitions(source.bootstrap, topic, range(partitions))
        assert read_partitions(target.bootstrap, topic, range(partitions)) == expected, topic


def assert_groups_resume(source: ClusterUnderTest, target: ClusterUnderTest) -> None:
    # billing committed nothing on orders[1]
    resumed = (("billing", "orders", [0, 2]), ("fulfillment", "orders", [0, 1, 2]), ("fulfillment", "audit", [0]))
    for group, topic, partitions in resumed:
        expected = resume_group(source.bootstrap, group, topic, partitions)
        assert all(expected.values()), (group, topic)
        assert resume_group(target.bootstrap, group, topic, partitions) == expected, (group, topic)


def test_migrate_topics_records_and_groups(source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path) -> None:
    seed(source)
    state = tmp_path / "progress.json"
    result = source.ok("migrate", "--to", target.bootstrap, "--state", str(state), "--verify", "--output", "json")
    document = json.loads(result.stdout)
    assert {t["name"]: t["partitions"] for t in document["topics"]} == {"audit": 1, "empty": 2, "orders": 3}
    assert sorted(document["created"]) == ["audit", "empty", "orders"]
    assert {t["name"]: t["configs"] for t in document["topics"]}["orders"] == {"retention.ms": "604800000"}
    assert document["records"] == 750
    assert document["verified"] is True
    assert len(document["checks"]) == 6
    assert {g["group"]: g["skipped"] for g in document["groups"]} == {"billing": None, "fulfillment": None}
    billing = next(g for g in document["groups"] if g["group"] == "billing")
    assert billing["offsets"] == {"orders/0": [40, 40], "orders/2": [25, 25]}

    described = json.loads(run_cli("topics", "describe", "orders", "-b", target.bootstrap, "--output", "json").stdout)
    assert len(described["partitions"]) == ORDERS_PARTITIONS
    assert_same_records(source, target)
    assert_groups_resume(source, target)

    saved = json.loads(state.read_text())
    assert saved["partitions"]["audit/0"] == {"next_source": 150, "next_target": 150, "runs": [[0, 0, 150]]}

    again = json.loads(source.ok("migrate", "--to", target.bootstrap, "--state", str(state), "--output", "json").stdout)
    assert again["records"] == 0  # nothing new: a second run copies nothing twice
    assert_same_records(source, target)

    produce(source.bootstrap, "audit", [(0, (b"late", b"arrival", [], BASE_MS + 99_999))])
    later = json.loads(source.ok("migrate", "--to", target.bootstrap, "--state", str(state), "--output", "json").stdout)
    assert later["records"] == 1  # what arrived since the last run
    assert_same_records(source, target)


def test_text_output_and_patterns(source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path) -> None:
    seed(source)
    result = source.ok(
        "migrate",
        "--to",
        target.bootstrap,
        "--state",
        str(tmp_path / "s.json"),
        "--topics",
        "ord*",
        "--groups",
        "bill*",
    )
    assert result.stdout.startswith("Migrated 1 topic(s), 600 record(s) (")
    assert "and 1 group(s) in " in result.stdout
    assert "Created 1 topic(s) on the target: orders\n" in result.stderr
    assert "Copied orders: 600 record(s), " in result.stderr
    assert "Group billing: 2 committed offset(s) carried over\n" in result.stderr
    names = [
        t["name"] for t in json.loads(run_cli("topics", "list", "-b", target.bootstrap, "--output", "json").stdout)
    ]
    assert names == ["orders"]
    bars = source.ok("migrate", "--to", target.bootstrap, "--state", str(tmp_path / "s.json"), "--progress")
    assert "audit" in bars.stderr  # one bar per topic on stderr, then the summary on stdout
    assert bars.stdout.startswith("Migrated 3 topic(s), 150 record(s)")  # orders was copied by the first run
    none = source.run("migrate", "--to", target.bootstrap, "--state", str(tmp_path / "s.json"), "--topics", "nothing*")
    assert (none.exit_code, none.stderr) == (2, f"kafkalite: no topic on {source.bootstrap} matches nothing*\n")


def test_reverse_direction_with_from(source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path) -> None:
    """`-b LOCAL --from REMOTE` pulls REMOTE into LOCAL: here Tansu back into a fresh KafkaLite."""
    seed(source)
    source.ok("migrate", "--to", target.bootstrap, "--state", str(tmp_path / "out.json"))
    with run_in_thread() as fresh:
        back = ClusterUnderTest("kafkalite", fresh.bootstrap)
        back.ok("migrate", "--from", target.bootstrap, "--state", str(tmp_path / "back.json"), "--verify")
        assert_same_records(source, back)
        assert_groups_resume(source, back)


class StopAfter:
    """A reporter that interrupts the migration (as Ctrl-C would) once `limit` records of a topic are copied."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def planned(self, topics: list[TopicPlan], created: list[str]) -> None: ...

    def progress(self, progress: TopicProgress) -> None:
        if progress.copied >= self.limit:
            raise KeyboardInterrupt

    def group(self, result: GroupResult) -> None: ...

    def verified(self, check: PartitionCheck) -> None: ...


def test_interrupted_migration_resumes_to_the_same_result(
    source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path
) -> None:
    seed(source)
    state = tmp_path / "progress.json"
    options = MigrationOptions(state_path=state)
    with pytest.raises(KeyboardInterrupt):
        migrate(ClientSettings(source.bootstrap), ClientSettings(target.bootstrap), options, StopAfter(1))
    partial = json.loads(state.read_text())["partitions"]
    copied = sum(run[2] for value in partial.values() for run in value["runs"])
    assert 0 < copied < 750  # stopped part-way, with its progress saved
    resumed = json.loads(
        source.ok("migrate", "--to", target.bootstrap, "--state", str(state), "--verify", "--output", "json").stdout
    )
    assert resumed["verified"] is True
    assert resumed["records"] == 750 - copied
    assert_same_records(source, target)
    assert_groups_resume(source, target)


# Runs `kafkalite migrate` with the crash point chosen rather than raced: the checkpoint is saved after every batch,
# and the save after the first one that recorded progress blocks for good (telling the test through a marker file),
# so records sent between those two saves are on the target (or lost in flight) and not in the progress file. The test
# then kill -9s the process, as power loss would, at that point and not after the copy has finished.
MIGRATE_UNTIL_SECOND_SAVE = """
import sys, threading
from pathlib import Path
import kafkalite.migrate.copy as copy
from kafkalite.migrate.checkpoint import Checkpoint
from kafkalite.cli import main

copy.SAVE_EVERY_S = 0.0
save = Checkpoint.save
recorded = []

def save_then_hang(self):
    if recorded:
        Path(sys.argv[1]).touch()
        threading.Event().wait()
    save(self)
    if any(value.runs for value in self.partitions.values()):
        recorded.append(True)

Checkpoint.save = save_then_hang
main(args=sys.argv[2:], prog_name="kafkalite")
"""


def test_killed_migration_resumes_without_duplicates(
    source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path
) -> None:
    """kill -9 part-way: records sent after the last save are found on the target and not sent again."""
    source.ok("topics", "create", "bulk", "-p", "2")
    produce(source.bootstrap, "bulk", [(i % 2, (None, b"x" * 100, [], BASE_MS + i)) for i in range(150_000)])
    commit_after(source.bootstrap, "bulk-readers", "bulk", 0, 1000)
    state = tmp_path / "progress.json"
    hung = tmp_path / "hung"
    command = [sys.executable, "-c", MIGRATE_UNTIL_SECOND_SAVE, str(hung),
               "migrate", "-b", source.bootstrap, "--to", target.bootstrap, "--state", str(state)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None and not hung.exists():
            time.sleep(0.02)
        assert hung.exists(), f"the migration never reached its second save: {process.poll()=}"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        _, errors = process.communicate()
    saved = json.loads(state.read_text())["partitions"]
    copied = sum(run[2] for value in saved.values() for run in value["runs"])
    assert 0 < copied < 150_000, errors.decode()
    resumed = json.loads(
        source.ok("migrate", "--to", target.bootstrap, "--state", str(state), "--verify", "--output", "json").stdout
    )
    assert resumed["verified"] is True
    for partition in (0, 1):
        assert len(read_all(target.bootstrap, "bulk", partition)) == 75_000
    expected = resume_group(source.bootstrap, "bulk-readers", "bulk", [0])
    assert len(expected[0]) == 74_000
    assert resume_group(target.bootstrap, "bulk-readers", "bulk", [0]) == expected


def test_verify_catches_an_altered_target(source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path) -> None:
    seed(source)
    state = tmp_path / "progress.json"
    source.ok("migrate", "--to", target.bootstrap, "--state", str(state), "--verify")
    assert source.ok("migrate", "--to", target.bootstrap, "--state", str(state), "--verify-only").stdout == (
        "Verified 6 of 6 partition(s): counts and checksums match\n"
    )
    # Rewrite the target's audit topic with the same number of records, one value changed.
    records = read_all(source.bootstrap, "audit", 0)
    run_cli("topics", "delete", "audit", "-b", target.bootstrap)
    run_cli("topics", "create", "audit", "-b", target.bootstrap)
    altered = [(0, (k, b"tampered" if i == 70 else v, h, t)) for i, (k, v, h, t) in enumerate(records)]
    produce(target.bootstrap, "audit", altered)
    result = source.run("migrate", "--to", target.bootstrap, "--state", str(state), "--verify-only")
    assert result.exit_code == 1
    assert result.stdout == "Verified 5 of 6 partition(s): counts and checksums match\n"
    assert "MISMATCH audit[0]: source 150 record(s) sha256 " in result.stderr
    assert ", target 150 sha256 " in result.stderr
    assert result.stderr.endswith("kafkalite: verification failed: audit[0] differ\n")

    # One record more on the target: counted, and a resumed copy refuses to take it for its own.
    produce(target.bootstrap, "orders", [(1, (b"intruder", b"!", [], BASE_MS))])
    counted = source.run(
        "migrate", "--to", target.bootstrap, "--state", str(state), "--verify-only", "--output", "json"
    )
    bad = [c for c in json.loads(counted.stdout)["checks"] if not c["ok"]]
    assert [(c["topic"], c["partition"], c["target_count"] - c["source_count"]) for c in bad] == [
        ("audit", 0, 0),
        ("orders", 1, 1),
    ]
    refused = source.run("migrate", "--to", target.bootstrap, "--state", str(state), "--topics", "orders")
    assert refused.exit_code == 2
    assert refused.stderr.endswith(
        "kafkalite: the target holds more records than this migration wrote (orders[1]: 1): "
        "it was written by someone else\n"
    )


def test_unusable_state_file_and_missing_target_topic(
    source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path
) -> None:
    source.ok("topics", "create", "orders", "-p", "1")
    nowhere = tmp_path / "missing-dir" / "s.json"
    unwritable = source.run("migrate", "--to", target.bootstrap, "--state", str(nowhere))
    assert (unwritable.exit_code, unwritable.stderr) == (
        2,
        f"kafkalite: cannot write the progress file {nowhere}: No such file or directory\n",
    )
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": 1, "source": "elsewhere:1", "target": "elsewhere:2", "partitions": {}}))
    mismatch = source.run("migrate", "--to", target.bootstrap, "--state", str(other))
    assert mismatch.exit_code == 2
    assert mismatch.stderr.startswith(f"kafkalite: the progress file {other} belongs to a migration from elsewhere:1")
    unverifiable = source.run("migrate", "--to", target.bootstrap, "--verify-only", "--topics", "orders")
    assert (unverifiable.exit_code, unverifiable.stderr) == (
        2,
        f"kafkalite: topic 'orders' does not exist on {target.bootstrap}\n",
    )


def test_target_with_foreign_records_is_refused(
    source: ClusterUnderTest, target: ClusterUnderTest, tmp_path: Path
) -> None:
    source.ok("topics", "create", "orders", "-p", "1")
    produce(source.bootstrap, "orders", [(0, (None, b"mine", [], BASE_MS))])
    run_cli("topics", "create", "orders", "-b", target.bootstrap)
    produce(target.bootstrap, "orders", [(0, (None, b"theirs", [], BASE_MS))])
    result = source.run("migrate", "--to", target.bootstrap, "--state", str(tmp_path / "s.json"))
    assert result.exit_code == 2
    assert result.stderr.endswith(
        f"kafkalite: orders[0] already holds 1 record(s) on {target.bootstrap}, not written by this migration (no "
        f"progress recorded in {tmp_path / 's.json'}); migrate into empty topics\n"
    )
