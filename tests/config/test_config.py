"""The settings tables: Kafka's names, types, defaults and rules; `server.properties` loading; describing."""

from __future__ import annotations

from pathlib import Path

import pytest

import kafkalite
from kafkalite.config import (
    BROKER_SETTINGS,
    BROKER_SYNONYMS,
    TOPIC_SETTINGS,
    BrokerConfig,
    ConfigSource,
    ConfigType,
    TopicConfig,
    check_broker_config,
    describe_broker,
    load_properties,
    validate_config,
)
from kafkalite.errors import InvalidConfigError

# Every topic config of Kafka 4.0 (`kafka-configs --describe --all` on a topic), plus KafkaLite's partition caps.
KAFKA_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type", "compression.zstd.level",
    "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
    "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
}  # fmt: skip


def test_every_kafka_topic_config_is_in_the_table_with_a_valid_default() -> None:
    assert set(TOPIC_SETTINGS) >= KAFKA_TOPIC_CONFIGS
    assert set(TOPIC_SETTINGS) - KAFKA_TOPIC_CONFIGS == {"max.partition.messages", "max.partition.bytes"}
    for setting in TOPIC_SETTINGS.values():
        assert setting.default is not None
        setting.parse(setting.default)
        assert setting.doc
        assert setting.name in BROKER_SYNONYMS


def test_types_are_kafkas() -> None:
    types = {name: setting.type for name, setting in TOPIC_SETTINGS.items()}
    assert types["retention.ms"] == ConfigType.LONG
    assert types["segment.bytes"] == ConfigType.INT
    assert types["cleanup.policy"] == ConfigType.LIST
    assert types["min.cleanable.dirty.ratio"] == ConfigType.DOUBLE
    assert types["preallocate"] == ConfigType.BOOLEAN
    assert types["compression.type"] == ConfigType.STRING


@pytest.mark.parametrize("codec", ["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"])
def test_compression_type_accepts_kafkas_codecs(codec: str) -> None:
    validate_config("compression.type", codec)


@pytest.mark.parametrize("policy", ["delete", "compact", "compact,delete", "delete, compact", ""])
def test_cleanup_policy_accepts_compact_delete_and_both(policy: str) -> None:
    validate_config("cleanup.policy", policy)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("compression.type", "gzipp", "compression.type: String must be one of: uncompressed, zstd"),
        ("cleanup.policy", "compact,remove", "cleanup.policy: Invalid value remove"),
        ("cleanup.policy", "delete,delete", "cleanup.policy: Duplicate items"),
        ("retention.ms", "soon", "retention.ms: Not a number of type LONG"),
        ("retention.ms", "-2", "retention.ms: Value must be at least -1"),
        ("retention.ms", "1_000", "retention.ms: Not a number of type LONG"),
        ("retention.ms", "\u0661", "retention.ms: Not a number of type LONG"),  # an Arabic-Indic digit
        ("min.cleanable.dirty.ratio", "nan", "no more than 1"),
        ("segment.bytes", str(2**31), "segment.bytes: Not a number of type INT"),
        ("segment.bytes", "13", "segment.bytes: Value must be at least 14"),
        ("min.cleanable.dirty.ratio", "1.5", "no more than 1"),
        ("preallocate", "yes", "Expected value to be either true or false"),
        ("compression.gzip.level", "10", "Value must be -1 or no less than 1 and no more than 9"),
        ("remote.storage.enable", "true", "Tiered Storage functionality is disabled"),
        ("max.partition.messages", "0", "-1 (no limit) or positive"),
        ("no.such.config", "1", "Unknown topic config name: no.such.config"),
    ],
)
def test_bad_values_name_the_key_and_the_rule(name: str, value: str, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_config(name, value)


def test_cleanup_policy_parts() -> None:
    assert TopicConfig({"cleanup.policy": "compact, delete"}).cleanup_policy == {"compact", "delete"}
    assert TopicConfig({"cleanup.policy": "compact"}).compacted
    assert not TopicConfig({"cleanup.policy": ""}).compacted
    assert not TopicConfig().compacted


def test_compaction_lags_are_checked_together() -> None:
    config = TopicConfig({"max.compaction.lag.ms": "1000"})
    with pytest.raises(InvalidConfigError, match=r"min.compaction.lag.ms \(5000\) > max.compaction.lag.ms \(1000\)"):
        config.update({"min.compaction.lag.ms": "5000"})
    assert config.overrides() == {"max.compaction.lag.ms": "1000"}
    config.update({"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": None})
    assert config.get("min.compaction.lag.ms") == "5000"


def test_describe_gives_sources_and_synonyms_from_topic_to_broker_to_default() -> None:
    config = TopicConfig({"retention.ms": "1000"}, {"retention.ms": "2000", "segment.ms": "60000"})
    entries = {entry.name: entry for entry in config.describe()}
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.type) == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG, 5)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", "2000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG),
    ]
    assert entries["segment.ms"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["segment.ms"].value == "60000"
    assert entries["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG
    assert entries["cleanup.policy"].is_default
    assert "KafkaLite" in entries["min.insync.replicas"].doc  # says it is accepted, not acted on
    assert set(entries) == set(TOPIC_SETTINGS)


def test_load_properties_maps_kafka_names_onto_the_broker_config(tmp_path: Path) -> None:
    properties = {
        "node.id": "3",
        "log.dirs": str(tmp_path),
        "num.partitions": "4",
        "auto.create.topics.enable": "false",
        "log.retention.check.interval.ms": "1500",
        "kafkalite.fsync": "never",
        "log.retention.ms": "60000",
        "message.max.bytes": "2000000",
        "listeners": "PLAINTEXT://0.0.0.0:9092",
    }
    config, server = load_properties(properties)
    assert config == BrokerConfig(
        data_dir=tmp_path,
        node_id=3,
        fsync=False,
        auto_create_topics=False,
        default_partitions=4,
        retention_check_interval_s=1.5,
        topic_defaults={"retention.ms": "60000", "max.message.bytes": "2000000"},
        static_settings=properties,
    )
    assert server == {"listeners": "PLAINTEXT://0.0.0.0:9092"}


# Apache Kafka 4.0's config/server.properties (KRaft, combined mode), its settings as shipped.
STOCK_SERVER_PROPERTIES = """
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def test_a_stock_kafka_server_properties_loads_unchanged() -> None:
    lines = [line for line in STOCK_SERVER_PROPERTIES.strip().splitlines() if line]
    properties = dict(line.split("=", 1) for line in lines)
    config, server = load_properties(properties)
    assert (config.node_id, config.data_dir, config.default_partitions) == (1, Path("/tmp/kraft-combined-logs"), 1)
    assert config.topic_defaults == {"retention.ms": str(168 * 3_600_000), "segment.bytes": "1073741824"}
    assert set(server) == {"listeners", "advertised.listeners", "listener.security.protocol.map",
                           "socket.request.max.bytes"}  # fmt: skip
    described = {e.name: e for e in describe_broker(config, server)}
    assert (described["log.retention.hours"].value, described["log.retention.hours"].source) == ("168", 4)
    assert described["num.io.threads"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert "no effect" in described["num.io.threads"].doc
    assert described["log.retention.minutes"].value is None


def test_synonyms_follow_kafkas_precedence_whatever_the_order() -> None:
    for ordered in (
        {"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "3000"},
        {"log.retention.ms": "3000", "log.retention.minutes": "2", "log.retention.hours": "1"},
    ):
        config, _ = load_properties(ordered)
        assert config.topic_defaults["retention.ms"] == "3000"
    config, _ = load_properties({"log.retention.hours": "1", "log.retention.minutes": "2"})
    assert config.topic_defaults["retention.ms"] == "120000"
    config, _ = load_properties({"node.id": "4", "broker.id": "5", "log.dir": "/b", "log.dirs": "/a"})
    assert (config.node_id, config.data_dir) == (4, Path("/a"))
    assert TopicConfig({}, config.topic_defaults).get("retention.ms") == "604800000"


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"num.partitions": "0"}, "num.partitions: Value must be at least 1"),
        ({"log.retention.ms": "x"}, "log.retention.ms: Not a number of type LONG"),
        ({"log.cleanup.policy": "shred"}, "log.cleanup.policy: Invalid value shred"),
        ({"log.dirs": "/a,/b"}, "exactly one directory"),
        ({"no.such.key": "1"}, "Unknown broker config name: no.such.key"),
    ],
)
def test_load_properties_refuses_bad_input(properties: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        load_properties(properties)


def test_describe_broker_lists_every_setting_with_its_source() -> None:
    config = BrokerConfig(default_partitions=3, topic_defaults={"retention.ms": "1000"})
    entries = {e.name: e for e in describe_broker(config, {"listeners": "PLAINTEXT://127.0.0.1:1234"})}
    assert set(entries) == set(BROKER_SETTINGS)
    assert {"advertised.listeners", "listeners", "log.dirs", "node.id", "log.retention.ms"} <= set(entries)
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == ("3", 4)
    assert (entries["node.id"].value, entries["node.id"].source) == ("0", ConfigSource.DEFAULT_CONFIG)
    assert (entries["log.retention.ms"].value, entries["log.retention.ms"].source) == ("1000", 4)
    assert entries["listeners"].value == "PLAINTEXT://127.0.0.1:1234"
    assert entries["advertised.listeners"].value is None
    assert entries["log.dirs"].value is None  # in memory
    assert all(e.read_only for e in entries.values())
    assert entries["log.retention.ms"].type == ConfigType.LONG
    assert [(s.value, s.source) for s in entries["num.partitions"].synonyms] == [
        ("3", ConfigSource.STATIC_BROKER_CONFIG),
        ("1", ConfigSource.DEFAULT_CONFIG),
    ]
    assert [(s.value, s.source) for s in entries["node.id"].synonyms] == [("0", ConfigSource.DEFAULT_CONFIG)]
    assert entries["advertised.listeners"].synonyms == ()  # no default, not set


def test_every_broker_default_parses_and_every_mapped_field_round_trips() -> None:
    described = {e.name: e.value for e in describe_broker(BrokerConfig(), {})}
    for key in BROKER_SETTINGS.values():
        if key.setting.default is not None:
            key.setting.parse(key.setting.default)
        if key.field is not None:  # the default BrokerConfig describes each field as the table's default
            assert described[key.name] == key.setting.default, key.name


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"default_partitions": 0}, "num.partitions: Value must be at least 1"),
        ({"offsets_partitions": -1}, "offsets.topic.num.partitions: Value must be at least 1"),
        ({"node_id": -3}, "node.id: Value must be at least 0"),
        ({"max_request_partition_size_limit": 0}, "max.request.partition.size.limit: Value must be no less than 1"),
        ({"topic_defaults": {"retention.ms": "soon"}}, "retention.ms: Not a number of type LONG"),
    ],
)
def test_a_broker_built_in_python_is_checked_by_the_table(settings: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        kafkalite.Broker(None, **settings)
    check_broker_config(BrokerConfig())  # the defaults keep every rule
