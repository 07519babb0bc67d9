"""The admin surface through the admin clients users have: kafka-python's (every admin call it has), confluent-kafka's
and aiokafka's, against an in-process served broker that keeps its logs on disk. Each answer is checked against
what a single-broker Kafka 4 answers, including the refusals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import confluent_kafka.admin
import kafka
import kafka.errors
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

CODECS = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ThreadedServer]:
    with run_in_thread(tmp_path / "data", fsync=False) as server:
        yield server


@pytest.fixture
def admin(served: ThreadedServer) -> Iterator[kafka.KafkaAdminClient]:
    client = kafka.KafkaAdminClient(bootstrap_servers=served.bootstrap, request_timeout_ms=10000)
    yield client
    client.close()


def produce(served: ThreadedServer, topic: str, partition: int, count: int) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=served.bootstrap, acks="all")
    for i in range(count):
        producer.send(topic, f"value-{i}".encode() * 10, partition=partition)
    producer.flush()
    producer.close()


# ---- kafka-python ---------------------------------------------------------------------------------------------------


def test_kafka_python_configs(served: ThreadedServer, admin: kafka.KafkaAdminClient) -> None:
    admin.create_topics([NewTopic(f"kp-{c}", 1, 1, topic_configs={"compression.type": c}) for c in CODECS])
    topic = ConfigResource(ConfigResourceType.TOPIC, "kp-gzip")
    configs = admin.describe_configs([topic], include_synonyms=True, config_filter="all")["topic"]["kp-gzip"]
    assert configs["compression.type"]["value"] == "gzip"
    assert configs["compression.type"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["retention.ms"]["config_type"] == "LONG"  # was UNKNOWN before the config table
    assert configs["cleanup.policy"]["config_type"] == "LIST"
    assert configs["retention.ms"]["synonyms"] == [
        {"name": "log.retention.ms", "value": "604800000", "source": "DEFAULT_CONFIG"}
    ]
    broker = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "0")], config_filter="all")
    settings = broker["broker"]["0"]
    assert settings["advertised.listeners"]["value"] == f"PLAINTEXT://{served.bootstrap}"
    assert settings["log.dirs"]["value"] == str(served.broker.data_dir)
    assert settings["node.id"]["config_type"] == "INT"
    assert all(s["read_only"] for s in settings.values())
    with pytest.raises(kafka.errors.InvalidConfigurationError, match=r"configuration compression\.type"):
        admin.create_topics([NewTopic("kp-bad", 1, 1, topic_configs={"compression.type": "brotli"})])
    bad = ConfigResource(ConfigResourceType.TOPIC, "kp-gzip", configs={"segment.ms": "0"})
    refused = admin.alter_configs([bad])["topic"]["kp-gzip"]
    assert refused.startswith("[Error 40] InvalidConfigurationError")
    assert "segment.ms: Value must be at least 1" in refused
    both = ConfigResource(ConfigResourceType.TOPIC, "kp-gzip", configs={"cleanup.policy": ("APPEND", "compact")})
    assert admin.alter_configs([both]) == {"topic": {"kp-gzip": "OK"}}
    assert served.broker.topic("kp-gzip").config.get("cleanup.policy") == "delete,compact"
    loggers = ConfigResource(ConfigResourceType.BROKER_LOGGER, "0")
    levels = admin.describe_configs([loggers], config_filter="all")["broker_logger"]["0"]
    assert {"root", "kafkalite.server"} <= set(levels)
    assert levels["kafkalite.server"]["config_source"] == "DYNAMIC_BROKER_LOGGER_CONFIG"
    topics = ["__consumer_offsets", *sorted(f"kp-{c}" for c in CODECS)]
    assert admin.list_config_resources(["topic"]) == {"topic": topics}
    assert admin.list_config_resources() == {"broker_logger": ["0"], "broker": ["0"], "topic": topics}


def test_kafka_python_log_dirs(served: ThreadedServer, admin: kafka.KafkaAdminClient) -> None:
    admin.create_topics([NewTopic("kp-dirs", 2, 1)])
    produce(served, "kp-dirs", 1, 50)
    data_dir = served.broker.data_dir
    assert data_dir is not None
    [answer] = admin.describe_log_dirs({"kp-dirs": [0, 1, 2]})
    [log_dir] = answer["log_dirs"]
    assert (log_dir["error_code"], log_dir["log_dir"]) == (0, str(data_dir))
    sizes = {p["partition_index"]: p["partition_size"] for t in log_dir["topics"] for p in t["partitions"]}
    on_disk = sum(f.stat().st_size for f in (data_dir / "kp-dirs-1").glob("*.log"))
    assert sizes == {0: 0, 1: on_disk}
    assert on_disk > 50 * 70
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] >= 0
    moved = admin.alter_replica_log_dirs({("kp-dirs", 0, 0): str(data_dir), ("kp-dirs", 1, 0): "/not/ours"})
    assert moved == {
        kafka.TopicPartitionReplica("kp-dirs", 0, 0): kafka.errors.NoError,
        kafka.TopicPartitionReplica("kp-dirs", 1, 0): kafka.errors.LogDirNotFoundError,
    }


def test_kafka_python_cluster_calls(served: ThreadedServer, admin: kafka.KafkaAdminClient) -> None:
    admin.create_topics([NewTopic("kp-cluster", 3, 1)])
    quorum = admin.describe_metadata_quorum()
    [partition] = quorum["topics"][0]["partitions"]
    assert (partition["leader_id"], partition["error"]) == (0, None)
    assert [v["replica_id"] for v in partition["current_voters"]] == [0]
    assert partition["observers"] == []
    assert quorum["nodes"][0]["listeners"][0]["port"] == served.port
    features = admin.describe_features()
    assert features["metadata.version"]["finalized"] == (25, 25)

    elected = admin.elect_leaders(0, {"kp-cluster": [0, 1, 2]})  # ELECTION_NOT_NEEDED is not an error to it
    assert {p.error_code for r in elected.replica_election_results for p in r.partition_result} == {84}
    with pytest.raises(kafka.errors.UnknownTopicOrPartitionError):
        admin.elect_leaders(0, {"kp-cluster": [7]})

    tp = kafka.TopicPartition("kp-cluster", 0)
    assert admin.alter_partition_reassignments({tp: [0]}) == {tp: None}
    assert admin.alter_partition_reassignments({tp: [0, 1]}) == {tp: kafka.errors.InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({tp: None}) == {tp: kafka.errors.NoReassignmentInProgressError}
    assert admin.list_partition_reassignments() == {}

    pages = []
    cursor = None
    while True:
        page = admin.describe_topic_partitions(["kp-cluster"], response_partition_limit=2, cursor=cursor)
        pages.append([(t["name"], p["partition_index"]) for t in page["topics"] for p in t["partitions"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == [[("kp-cluster", 0), ("kp-cluster", 1)], [("kp-cluster", 2)]]


def test_kafka_python_offset_delete_follows_the_group(served: ThreadedServer, admin: kafka.KafkaAdminClient) -> None:
    admin.create_topics([NewTopic("kp-consumed", 1, 1), NewTopic("kp-other", 1, 1)])
    produce(served, "kp-consumed", 0, 3)
    group = "kp-offsets"
    served.call(served.broker.offsets.commit_many(group, [("kp-other", 0, 1, "", -1)]))
    consumer = kafka.KafkaConsumer(
        "kp-consumed",
        bootstrap_servers=served.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer never joined"
            # One poll long enough for a whole join: kafka-python 3.0 never applies the assignment of a join that
            # completes after a poll's timeout ran out, and a loaded machine can take longer than a short poll.
            consumer.poll(timeout_ms=max(1, int((deadline - time.monotonic()) * 1000)))
        consumed = kafka.TopicPartition("kp-consumed", 0)
        consumer.commit({consumed: kafka.OffsetAndMetadata(2, "", -1)})
        other = kafka.TopicPartition("kp-other", 0)
        errors = admin.delete_group_offsets(group, [consumed, other])
        assert errors == {consumed: kafka.errors.GroupSubscribedToTopicError, other: kafka.errors.NoError}
        assert set(admin.list_group_offsets({group: None})[group]) == {consumed}
    finally:
        consumer.close()
    assert admin.delete_group_offsets(group, [consumed]) == {consumed: kafka.errors.NoError}
    assert admin.list_group_offsets({group: None})[group] == {}
    with pytest.raises(kafka.errors.GroupIdNotFoundError):
        admin.delete_group_offsets("no-such-group", [consumed])


# ---- confluent-kafka ------------------------------------------------------------------------------------------------


def test_confluent_configs_and_elections(served: ThreadedServer) -> None:
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": served.bootstrap})
    futures = admin.create_topics(
        [confluent_kafka.admin.NewTopic(f"cf-{c}", 1, 1, config={"compression.type": c}) for c in CODECS]
    )
    assert {topic: future.result(30) for topic, future in futures.items()} == dict.fromkeys(
        (f"cf-{c}" for c in CODECS), None
    )
    resources = [
        confluent_kafka.admin.ConfigResource("topic", "cf-zstd"),
        confluent_kafka.admin.ConfigResource("broker", "0"),
    ]
    topic, broker = (future.result(30) for future in admin.describe_configs(resources).values())
    compression = topic["compression.type"]
    assert (compression.value, compression.source) == (
        "zstd",
        confluent_kafka.admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert topic["retention.ms"].is_default
    assert broker["advertised.listeners"].value == f"PLAINTEXT://{served.bootstrap}"
    assert broker["listeners"].is_read_only

    append = confluent_kafka.admin.ConfigEntry(
        "cleanup.policy", "compact", incremental_operation=confluent_kafka.admin.AlterConfigOpType.APPEND
    )
    resource = confluent_kafka.admin.ConfigResource("topic", "cf-zstd", incremental_configs=[append])
    [future] = admin.incremental_alter_configs([resource]).values()
    future.result(30)
    assert served.broker.topic("cf-zstd").config.get("cleanup.policy") == "delete,compact"
    wrong = confluent_kafka.admin.ConfigEntry(
        "retention.ms", "soon", incremental_operation=confluent_kafka.admin.AlterConfigOpType.SET
    )
    resource = confluent_kafka.admin.ConfigResource("topic", "cf-zstd", incremental_configs=[wrong])
    [future] = admin.incremental_alter_configs([resource]).values()
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        future.result(30)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.INVALID_CONFIG
    assert "retention.ms: Not a number of type LONG" in refused.value.args[0].str()

    partitions = [confluent_kafka.TopicPartition("cf-zstd", 0), confluent_kafka.TopicPartition("cf-none", 0)]
    results = admin.elect_leaders(confluent_kafka.ElectionType.PREFERRED, partitions).result(30)
    codes = {(tp.topic, tp.partition): error.code() for tp, error in results.items()}
    assert codes == {
        ("cf-zstd", 0): confluent_kafka.KafkaError.ELECTION_NOT_NEEDED,
        ("cf-none", 0): confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART,
    }


# ---- aiokafka -------------------------------------------------------------------------------------------------------


def test_aiokafka_configs(served: ThreadedServer) -> None:
    async def main() -> tuple[Any, Any, Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=served.bootstrap)
        await admin.start()
        try:
            created = await admin.create_topics(
                [AioNewTopic("aio-lz4", 1, 1, topic_configs={"compression.type": "lz4"})]
            )
            described = await admin.describe_configs(
                [AioConfigResource(AioConfigResourceType.TOPIC, "aio-lz4")], include_synonyms=True
            )
            refused = await admin.alter_configs(
                [AioConfigResource(AioConfigResourceType.TOPIC, "aio-lz4", {"cleanup.policy": "shred"})]
            )
            return created, described, refused
        finally:
            await admin.close()

    created, [described], [refused] = asyncio.run(main())
    assert [error for _name, error, _message in created.topic_errors] == [0]
    [(error, _message, _type, _name, entries)] = described.resources
    assert error == 0
    by_name = {entry[0]: entry for entry in entries}
    assert by_name["compression.type"][1:4] == ("lz4", False, 1)  # value, read_only, DYNAMIC_TOPIC_CONFIG
    assert by_name["delete.retention.ms"][5] == [("log.cleaner.delete.retention.ms", "86400000", 5)]
    [(code, message, _type, _name)] = refused.resources
    assert code == 40
    assert message.startswith("Invalid value shred for configuration cleanup.policy")
