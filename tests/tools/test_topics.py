"""`kafkalite topics list|describe|create|alter|delete` against KafkaLite and Tansu, output checked."""

from __future__ import annotations

import json

import pytest

from .conftest import ClusterUnderTest, lines, produce_lines

pytestmark = pytest.mark.interop


def test_create_list_describe_delete(cluster: ClusterUnderTest) -> None:
    created = cluster.ok("topics", "create", "inventory", "-p", "3", "-c", "retention.ms=86400000")
    assert created.stdout == "Created topic inventory with 3 partition(s)\n"
    listed = json.loads(cluster.ok("topics", "list", "--output", "json").stdout)
    assert {"name": "inventory", "partitions": 3, "replication_factor": 1, "internal": False} in listed
    table = lines(cluster.ok("topics", "list"))
    assert table[0].split() == ["TOPIC", "PARTITIONS", "REPLICAS"]
    assert ["inventory", "3", "1"] in [row.split() for row in table[1:]]

    produce_lines(cluster, "inventory", ["a", "b", "c", "d"], "-p", "1")
    produce_lines(cluster, "inventory", ["e"], "-p", "2")
    described = json.loads(cluster.ok("topics", "describe", "inventory", "--output", "json").stdout)
    assert described["name"] == "inventory"
    assert described["messages"] == 5
    offsets = [(p["partition"], p["start_offset"], p["end_offset"], p["messages"]) for p in described["partitions"]]
    assert offsets == [(0, 0, 0, 0), (1, 0, 4, 4), (2, 0, 1, 1)]
    text = lines(cluster.ok("topics", "describe", "inventory"))
    assert text[0] == "Topic inventory: 3 partition(s), 5 message(s)"
    assert text[1].split() == ["PARTITION", "LEADER", "REPLICAS", "ISR", "START", "END", "MESSAGES"]
    assert text[3].split()[0] == "1"
    assert text[3].split()[-3:] == ["0", "4", "4"]
    if cluster.name == "kafkalite":  # Tansu reports every config as a default, even one set at creation
        assert described["configs"] == {"retention.ms": "86400000"}
        assert "retention.ms  86400000" in "\n".join(text)

    assert cluster.ok("topics", "delete", "inventory").stdout == "Deleted topic(s) inventory\n"
    names = [t["name"] for t in json.loads(cluster.ok("topics", "list", "--output", "json").stdout)]
    assert "inventory" not in names


def test_alter_sets_and_deletes_configs(cluster: ClusterUnderTest) -> None:
    cluster.ok("topics", "create", "ledger", "-p", "1", "-c", "retention.ms=1000", "-c", "cleanup.policy=delete")
    assert cluster.ok("topics", "alter", "ledger", "-c", "retention.ms=5000").stdout == "Altered topic ledger\n"
    if cluster.name == "kafkalite":
        configs = json.loads(cluster.ok("topics", "describe", "ledger", "--output", "json").stdout)["configs"]
        assert configs == {"cleanup.policy": "delete", "retention.ms": "5000"}  # incremental: the other one stays
        cluster.ok("topics", "alter", "ledger", "--delete-config", "cleanup.policy")
        configs = json.loads(cluster.ok("topics", "describe", "ledger", "--output", "json").stdout)["configs"]
        assert configs == {"retention.ms": "5000"}


def test_alter_adds_partitions(kafkalite_cluster: ClusterUnderTest) -> None:
    kafkalite_cluster.ok("topics", "create", "growing", "-p", "2")
    kafkalite_cluster.ok("topics", "alter", "growing", "-p", "5")
    described = json.loads(kafkalite_cluster.ok("topics", "describe", "growing", "--output", "json").stdout)
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2, 3, 4]
    shrink = kafkalite_cluster.run("topics", "alter", "growing", "-p", "3")
    assert (shrink.exit_code, shrink.stderr) == (
        2,
        "kafkalite: topic 'growing' has 5 partitions; Kafka can add partitions but not remove them\n",
    )


def test_tansu_without_create_partitions_is_one_line(tansu_cluster: ClusterUnderTest) -> None:
    tansu_cluster.ok("topics", "create", "fixed", "-p", "1")
    result = tansu_cluster.run("topics", "alter", "fixed", "-p", "2")
    assert result.exit_code == 2
    assert result.stderr.startswith("kafkalite: add partitions to topic fixed: CreatePartitions")
    assert result.stderr.count("\n") == 1


def test_topic_errors_name_the_culprit(cluster: ClusterUnderTest) -> None:
    cluster.ok("topics", "create", "taken", "-p", "1")
    exists = cluster.run("topics", "create", "taken")
    assert exists.exit_code == 2
    assert exists.stderr.startswith("kafkalite: create topic taken: ")
    assert exists.stderr.count("\n") == 1
    assert cluster.ok("topics", "create", "taken", "--if-not-exists").stdout == ""
    for args in (("describe", "nope"), ("delete", "nope"), ("alter", "nope", "-c", "retention.ms=1")):
        missing = cluster.run("topics", *args)
        assert (missing.exit_code, missing.stderr) == (
            2,
            f"kafkalite: topic 'nope' does not exist on {cluster.bootstrap}\n",
        ), args
    names = [t["name"] for t in json.loads(cluster.ok("topics", "list", "--output", "json").stdout)]
    assert "nope" not in names  # describing a missing topic never auto-creates it
    bad = cluster.run("topics", "create", "odd", "-c", "retention.ms")
    assert (bad.exit_code, bad.stderr) == (2, "kafkalite: bad -c 'retention.ms': expected key=value\n")
    nothing = cluster.run("topics", "alter", "taken")
    assert nothing.exit_code == 2
    assert (
        nothing.stderr == "kafkalite topics alter: nothing to change: give -c KEY=VALUE, --delete-config KEY or -p N\n"
    )
