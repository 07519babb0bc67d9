"""`kafkalite groups list|describe|reset-offsets|delete` against KafkaLite and Tansu, output checked."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator

import confluent_kafka
import pytest

from .conftest import ClusterUnderTest, lines, produce_lines

pytestmark = pytest.mark.interop

NUMBERS = itertools.count()


def offsets(cluster: ClusterUnderTest, group: str) -> dict[tuple[str, int], int | None]:
    document = json.loads(cluster.ok("groups", "describe", group, "--output", "json").stdout)
    return {(p["topic"], p["partition"]): p["committed"] for p in document["partitions"]}


@pytest.fixture
def payments(cluster: ClusterUnderTest) -> Iterator[tuple[str, str]]:
    """A fresh topic with 2 partitions of 10 and 4 records and a fresh group that committed 6 and 1 on them."""
    number = next(NUMBERS)
    topic, group = f"payments-{number}", f"ledger-{number}"
    cluster.ok("topics", "create", topic, "-p", "2")
    produce_lines(cluster, topic, [f"a{i}" for i in range(10)], "-p", "0")
    produce_lines(cluster, topic, [f"b{i}" for i in range(4)], "-p", "1")
    cluster.ok("consume", topic, "-g", group, "-p", "0", "-n", "6")
    cluster.ok("consume", topic, "-g", group, "-p", "1", "-n", "1")
    yield topic, group
    cluster.ok("topics", "delete", topic)


def test_list_and_describe_lag(cluster: ClusterUnderTest, payments: tuple[str, str]) -> None:
    topic, group = payments
    listed = json.loads(cluster.ok("groups", "list", "--output", "json").stdout)
    assert group in [g["group_id"] for g in listed]
    assert [group] == [row.split()[0] for row in lines(cluster.ok("groups", "list"))[1:] if row.split()[0] == group]
    document = json.loads(cluster.ok("groups", "describe", group, "--output", "json").stdout)
    assert document["members"] == []
    assert [
        (p["topic"], p["partition"], p["committed"], p["end_offset"], p["lag"]) for p in document["partitions"]
    ] == [
        (topic, 0, 6, 10, 4),
        (topic, 1, 1, 4, 3),
    ]
    assert document["total_lag"] == 7
    text = lines(cluster.ok("groups", "describe", group))
    assert text[0].startswith(f"Group {group}: ")
    assert text[0].endswith(", 0 member(s), total lag 7")
    assert [topic, "0", "6", "10", "4", "-"] in [row.split() for row in text]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--to-earliest",), {0: 0, 1: 0}),
        (("--to-latest",), {0: 10, 1: 4}),
        (("--to-offset", "3"), {0: 3, 1: 3}),
        (("--to-offset", "99"), {0: 10, 1: 4}),  # clamped to the log end
        (("--shift-by", "-2"), {0: 4, 1: 0}),  # clamped to the log start
        (("--shift-by", "2"), {0: 8, 1: 3}),
        (("--to-datetime", "2000-01-01T00:00:00+00:00"), {0: 0, 1: 0}),
    ],
)
def test_reset_offsets(
    cluster: ClusterUnderTest, payments: tuple[str, str], flags: tuple[str, ...], expected: dict[int, int]
) -> None:
    topic, group = payments
    dry = json.loads(
        cluster.ok("groups", "reset-offsets", group, "-t", topic, *flags, "--dry-run", "--output", "json").stdout
    )
    assert dry["dry_run"] is True
    assert {c["partition"]: (c["current"], c["new"]) for c in dry["offsets"]} == {
        0: (6, expected[0]),
        1: (1, expected[1]),
    }
    assert offsets(cluster, group) == {(topic, 0): 6, (topic, 1): 1}  # a dry run commits nothing
    table = lines(cluster.ok("groups", "reset-offsets", group, "-t", topic, *flags))
    assert table[0] == f"Group {group}: new offsets"
    assert offsets(cluster, group) == {(topic, 0): expected[0], (topic, 1): expected[1]}


def test_reset_one_partition_then_consume_from_there(cluster: ClusterUnderTest, payments: tuple[str, str]) -> None:
    topic, group = payments
    cluster.ok("groups", "reset-offsets", group, "-t", topic, "-p", "1", "--to-offset", "2")
    assert offsets(cluster, group) == {(topic, 0): 6, (topic, 1): 2}
    assert lines(cluster.ok("consume", topic, "-g", group, "-p", "1")) == ["b2", "b3"]


def test_delete_group(cluster: ClusterUnderTest, payments: tuple[str, str]) -> None:
    _, group = payments
    assert cluster.ok("groups", "delete", group).stdout == f"Deleted group(s) {group}\n"
    listed = json.loads(cluster.ok("groups", "list", "--output", "json").stdout)
    assert group not in [g["group_id"] for g in listed]
    gone = cluster.run("groups", "describe", group)
    assert (gone.exit_code, gone.stderr) == (2, f"kafkalite: group '{group}' does not exist on {cluster.bootstrap}\n")


def test_reset_errors_are_one_line(cluster: ClusterUnderTest, payments: tuple[str, str]) -> None:
    topic, group = payments
    none = cluster.run("groups", "reset-offsets", group, "-t", topic)
    assert none.exit_code == 2
    assert none.stderr == (
        "kafkalite: give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by (got none)\n"
    )
    two = cluster.run("groups", "reset-offsets", group, "-t", topic, "--to-earliest", "--to-latest")
    assert two.exit_code == 2
    assert two.stderr.endswith("(got --to-earliest, --to-latest)\n")
    missing = cluster.run("groups", "reset-offsets", group, "-t", "nowhere", "--to-earliest")
    assert (missing.exit_code, missing.stderr) == (
        2,
        f"kafkalite: topic 'nowhere' does not exist on {cluster.bootstrap}\n",
    )
    partition = cluster.run("groups", "reset-offsets", group, "-t", topic, "-p", "7", "--to-earliest")
    assert (partition.exit_code, partition.stderr) == (
        2,
        f"kafkalite: topic '{topic}' has no partition 7 (it has 2)\n",
    )


def test_active_group_members_and_refused_reset(kafkalite_cluster: ClusterUnderTest) -> None:
    cluster = kafkalite_cluster
    cluster.ok("topics", "create", "busy", "-p", "2")
    produce_lines(cluster, "busy", ["x", "y", "z"], "-p", "0")
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "busy-readers",
            "client.id": "reader-1",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["busy"])
    stop = threading.Event()
    joined = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            if consumer.poll(0.1) is not None or consumer.assignment():
                joined.set()
        consumer.close()

    thread = threading.Thread(target=poll)
    thread.start()
    try:
        assert joined.wait(30)
        deadline = time.monotonic() + 30
        while True:
            document = json.loads(cluster.ok("groups", "describe", "busy-readers", "--output", "json").stdout)
            if document["state"] == "stable" and document["members"] and document["members"][0]["assignment"]:
                break
            assert time.monotonic() < deadline, document
            time.sleep(0.2)
        (member,) = document["members"]
        assert member["client_id"] == "reader-1"
        assert member["assignment"] == [["busy", 0], ["busy", 1]]
        assert {(p["partition"], p["member"]) for p in document["partitions"]} == {(0, "reader-1"), (1, "reader-1")}
        text = "\n".join(lines(cluster.ok("groups", "describe", "busy-readers")))
        assert "busy[0] busy[1]" in text
        refused = cluster.run("groups", "reset-offsets", "busy-readers", "-t", "busy", "--to-earliest")
        assert refused.exit_code == 2
        assert refused.stderr == (
            "kafkalite: group 'busy-readers' has 1 active member(s) (state stable); stop its consumers first: "
            "Kafka only accepts new offsets for an empty group\n"
        )
    finally:
        stop.set()
        thread.join()


def test_offsets_of_a_deleted_topic_stay_listed(kafkalite_cluster: ClusterUnderTest) -> None:
    """KafkaLite keeps a group's offsets on a deleted topic; describe lists them without end offset or lag."""
    cluster = kafkalite_cluster
    for topic in ("kept", "dropped"):
        produce_lines(cluster, topic, ["one", "two"])
        cluster.ok("consume", topic, "-g", "survivor", "-n", "1")
    cluster.ok("topics", "delete", "dropped")
    document = json.loads(cluster.ok("groups", "describe", "survivor", "--output", "json").stdout)
    rows = [(p["topic"], p["committed"], p["end_offset"], p["lag"]) for p in document["partitions"]]
    assert rows == [("dropped", 1, None, None), ("kept", 1, 2, 1)]
    assert document["total_lag"] == 1
