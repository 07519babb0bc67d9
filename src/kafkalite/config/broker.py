"""Broker settings under their Kafka names, and how each maps onto `BrokerConfig`.

`BROKER_SETTINGS` is the broker's table. Each `BrokerKey` is a `Setting` (type, default, rule, doc) plus where its
value lives:
- `field`: a `BrokerConfig` field (`num.partitions` → `default_partitions`), with `to_field`/`from_field` converting
  between the Kafka value and the field (`log.retention.check.interval.ms` is milliseconds, the field seconds);
- `topic_config`: the topic config it is the cluster-wide default of (`log.retention.ms` → `retention.ms`), stored in
  `BrokerConfig.topic_defaults` under the topic config's name;
- `server`: a setting of the running server (`config.server_settings`: listeners, TLS, SASL, the authorizer,
  connection limits), which the server layer applies and supplies when the broker is described;
- none of these: a key Kafka needs for a cluster and a single broker has no use for (replication factors, thread
  counts, quorum voters), accepted so that a stock `server.properties` starts unchanged, and reported as set.

Kafka's synonyms in other units are rows too: `log.retention.hours` and `log.retention.minutes` set the default of
`retention.ms` (`to_topic` converts), and where several keys set one value the lowest `precedence` wins whatever the
order of the lines (`log.retention.ms` over `.minutes` over `.hours`; `log.dirs` over `log.dir`; `node.id` over
`broker.id`), as in Kafka.

Adding a setting is one row here. `load_properties` maps `server.properties`-style `key=value` strings onto a
`BrokerConfig` through the table, keeping the strings as given in `static_settings` (the server's own settings come
back apart for the server layer); `describe_broker` answers DescribeConfigs for the BROKER resource from the same
table: a key set at start is STATIC_BROKER_CONFIG with the value as given, with Kafka's synonyms (that value, then
the default). Broker settings are static: set at start, described as read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from kafkalite.config.schema import INT32_MAX, ConfigSource, ConfigType, Setting, at_least, between, one_of, table
from kafkalite.config.server_settings import SERVER_SETTINGS
from kafkalite.config.topic import BROKER_SYNONYMS, TOPIC_SETTINGS, ConfigEntry, ConfigSynonym, validate_config
from kafkalite.errors import InvalidConfigError


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Everything `Broker` needs to start; `kafkalite serve` flags and `load_properties` map onto these fields."""

    data_dir: Path | None = None  # log.dirs; None: memory-only storage, nothing survives the process
    node_id: int = 0  # node.id
    fsync: bool = True  # False: acks=all is answered after write(), for throwaway test brokers
    auto_create_topics: bool = True  # auto.create.topics.enable
    default_partitions: int = 1  # num.partitions
    offsets_partitions: int = 1  # offsets.topic.num.partitions
    offsets_segment_bytes: int = 100 * 1024 * 1024  # offsets.topic.segment.bytes
    retention_check_interval_s: float = 300.0  # log.retention.check.interval.ms
    log_cleaner_enable: bool = True  # log.cleaner.enable
    log_cleaner_backoff_s: float = 15.0  # log.cleaner.backoff.ms: the pause when no log needs cleaning
    log_cleaner_io_max_bytes_per_second: float | None = None  # log.cleaner.io.max.bytes.per.second (None: no limit)
    log_cleaner_max_keys: int = 1_000_000  # keys one cleaning maps (Kafka: log.cleaner.dedupe.buffer.size, in bytes)
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 0
    group_consumer_session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms (KIP-848 groups)
    group_consumer_heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors; the first is default
    group_consumer_max_size: int | None = None  # group.consumer.max.size (None: Kafka's Int.MaxValue)
    transaction_max_timeout_ms: int = 900_000  # transaction.max.timeout.ms: the longest transaction.timeout.ms
    transaction_abort_interval_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    transactional_id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms: idle ids are forgotten
    producer_id_expiration_ms: int = 86_400_000  # producer.id.expiration.ms: idle producers' state is forgotten
    producer_id_expiration_check_interval_ms: int = 600_000  # producer.id.expiration.check.interval.ms
    max_request_partition_size_limit: int = 2000  # DescribeTopicPartitions' cap on partitions per answer
    topic_defaults: Mapping[str, str] = field(default_factory=dict)  # broker-wide overrides of topic config defaults
    static_settings: Mapping[str, str] = field(default_factory=dict)  # key=value as loaded (server.properties)


def _same(value: Any) -> Any:
    return value


def _kafka_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class BrokerKey:
    """One broker setting and where its value lives (see the module docstring)."""

    setting: Setting
    field: str | None = None
    to_field: Callable[[Any], Any] = _same
    from_field: Callable[[Any], str | None] = _kafka_string
    topic_config: str | None = None
    to_topic: Callable[[Any], str] | None = None  # a synonym in other units: its parsed value → the topic config's
    server: bool = False
    precedence: int = 0  # among keys setting the same value, the lowest wins

    @property
    def name(self) -> str:
        return self.setting.name


def _one_directory(value: Any) -> None:
    if len([d for d in value.split(",") if d.strip()]) != 1:  # Kafka's log.dirs is a comma-separated list
        raise ValueError("KafkaLite keeps its logs in exactly one directory")


def _path_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


_DOUBLE_MAX = "1.7976931348623157E308"  # Kafka's Double.MAX_VALUE: no limit
_DEDUPE_ENTRY_BYTES = 24  # one entry of Kafka's cleaner offset map: a 16-byte key hash and an 8-byte offset
_B, _S, _I, _L, _LIST = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG, ConfigType.LIST
_SHORT = ConfigType.SHORT

_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def _assignor_names(names: Any) -> None:
    short = [_ASSIGNOR_CLASSES.get(n, n) for n in names]
    if not short:
        raise ValueError("At least one assignor must be given")
    for name in short:
        if name not in ("uniform", "range"):
            raise ValueError(f"Invalid value {name}; items must be among: uniform, range")
    if len(set(short)) != len(short):
        raise ValueError("Duplicate items; items must be among: uniform, range")


_OWN_SETTINGS = [
    BrokerKey(
        Setting("node.id", _I, "0", "The node id of this broker (and controller).", at_least(0), read_only=True),
        "node_id",
    ),
    BrokerKey(
        Setting(
            "log.dirs", _S, None, "The directory the log data is kept in; unset: kept in memory only.",
            _one_directory, read_only=True,
        ),
        "data_dir", to_field=lambda text: Path(next(d.strip() for d in text.split(",") if d.strip())),
        from_field=_path_or_none,
    ),
    BrokerKey(
        Setting(
            "kafkalite.fsync", _S, "always",
            "KafkaLite: \"always\" answers an acks=all produce once its bytes are fsynced (one fsync serves every "
            "produce waiting for it); \"never\" only writes, for throwaway test brokers.",
            one_of("always", "never"), read_only=True,
        ),
        "fsync", to_field=lambda value: value == "always", from_field=lambda on: "always" if on else "never",
    ),
    BrokerKey(
        Setting("auto.create.topics.enable", _B, "true", "Create a topic on first use (Metadata, Produce).",
                read_only=True),
        "auto_create_topics",
    ),
    BrokerKey(
        Setting("num.partitions", _I, "1", "The default number of partitions of a new topic.", at_least(1),
                read_only=True),
        "default_partitions",
    ),
    BrokerKey(
        Setting("offsets.topic.num.partitions", _I, "1", "The number of partitions of __consumer_offsets.",
                at_least(1), read_only=True, note="the default is 1, Kafka's is 50."),
        "offsets_partitions",
    ),
    BrokerKey(
        Setting("log.retention.check.interval.ms", _L, "300000",
                "How often the broker looks for log segments to delete.", at_least(1), read_only=True),
        "retention_check_interval_s", to_field=lambda ms: ms / 1000,
        from_field=lambda seconds: str(round(seconds * 1000)),
    ),
    BrokerKey(
        Setting("group.min.session.timeout.ms", _I, "6000", "The shortest session timeout a group member may ask.",
                read_only=True),
        "group_min_session_timeout_ms",
    ),
    BrokerKey(
        Setting("group.max.session.timeout.ms", _I, "1800000", "The longest session timeout a group member may ask.",
                read_only=True),
        "group_max_session_timeout_ms",
    ),
    BrokerKey(
        Setting("group.initial.rebalance.delay.ms", _I, "0",
                "How long a new group waits for more members before its first rebalance.", read_only=True,
                note="the default is 0, Kafka's is 3000."),
        "group_initial_rebalance_delay_ms",
    ),
    BrokerKey(
        Setting("group.consumer.session.timeout.ms", _I, "45000",
                "How long a consumer-protocol (KIP-848) group member may go without heartbeating before it is fenced.",
                at_least(1), read_only=True),
        "group_consumer_session_timeout_ms",
    ),
    BrokerKey(
        Setting("group.consumer.heartbeat.interval.ms", _I, "5000",
                "How often consumer-protocol group members are told to heartbeat.", at_least(1), read_only=True),
        "group_consumer_heartbeat_interval_ms",
    ),
    BrokerKey(
        Setting("group.consumer.assignors", _LIST, "uniform,range",
                "The server-side assignors of consumer-protocol groups; the first is the default. Kafka's class names "
                "of the two are accepted too.", _assignor_names, read_only=True),
        "group_consumer_assignors", to_field=lambda names: tuple(_ASSIGNOR_CLASSES.get(n, n) for n in names),
        from_field=",".join,
    ),
    BrokerKey(
        Setting("group.consumer.max.size", _I, str(INT32_MAX),
                "The most members a consumer-protocol group may have.", at_least(1), read_only=True),
        "group_consumer_max_size", to_field=lambda n: None if n == INT32_MAX else n,
        from_field=lambda n: str(INT32_MAX if n is None else n),
    ),
    BrokerKey(
        Setting("transaction.max.timeout.ms", _I, "900000",
                "The longest transaction.timeout.ms a transactional producer may ask for.", at_least(1),
                read_only=True),
        "transaction_max_timeout_ms",
    ),
    BrokerKey(
        Setting("transaction.abort.timed.out.transaction.cleanup.interval.ms", _I, "10000",
                "How often transactions past their timeout are looked for and aborted.", at_least(1), read_only=True),
        "transaction_abort_interval_ms",
    ),
    BrokerKey(
        Setting("transactional.id.expiration.ms", _I, "604800000",
                "How long a transactional id with no transaction ongoing is kept without any request before the "
                "transaction coordinator forgets it.", between(1, INT32_MAX), read_only=True,
                note="looked for at every transaction.abort.timed.out.transaction.cleanup.interval.ms."),
        "transactional_id_expiration_ms",
    ),
    BrokerKey(
        Setting("producer.id.expiration.ms", _I, "86400000",
                "How long a partition keeps the state of an idempotent or transactional producer (its epoch and last "
                "sequences) after the producer's last batch, measured from the batch's timestamp; a producer with a "
                "transaction open there is kept.", between(1, INT32_MAX), read_only=True,
                note="looked for at every producer.id.expiration.check.interval.ms and at start."),
        "producer_id_expiration_ms",
    ),
    BrokerKey(
        Setting("producer.id.expiration.check.interval.ms", _I, "600000",
                "How often partitions look for producers past producer.id.expiration.ms.", at_least(1),
                read_only=True),
        "producer_id_expiration_check_interval_ms",
    ),
    BrokerKey(
        Setting("max.request.partition.size.limit", _I, "2000",
                "The most partitions a DescribeTopicPartitions answer holds.", between(1, INT32_MAX), read_only=True),
        "max_request_partition_size_limit",
    ),
    BrokerKey(
        Setting("offsets.topic.segment.bytes", _I, "104857600", "The segment size of __consumer_offsets.", at_least(1),
                read_only=True),
        "offsets_segment_bytes",
    ),
    BrokerKey(
        Setting("log.cleaner.enable", _B, "true", "Run the log cleaner, which compacts the compacted topics.",
                read_only=True),
        "log_cleaner_enable",
    ),
    BrokerKey(
        Setting("log.cleaner.backoff.ms", _L, "15000", "How long the cleaner sleeps when no log needs cleaning.",
                at_least(0), read_only=True),
        "log_cleaner_backoff_s", to_field=lambda ms: ms / 1000, from_field=lambda seconds: str(round(seconds * 1000)),
    ),
    BrokerKey(
        Setting("log.cleaner.io.max.bytes.per.second", ConfigType.DOUBLE, _DOUBLE_MAX,
                "The most bytes per second the cleaner reads and writes.", at_least(0), read_only=True),
        "log_cleaner_io_max_bytes_per_second", to_field=lambda rate: None if rate >= float(_DOUBLE_MAX) else rate,
        from_field=lambda rate: _DOUBLE_MAX if rate is None else str(rate),
    ),
    BrokerKey(
        Setting("log.cleaner.dedupe.buffer.size", _L, str(1_000_000 * _DEDUPE_ENTRY_BYTES),
                "The memory one cleaning may use to map keys to their latest offsets.", at_least(_DEDUPE_ENTRY_BYTES),
                read_only=True, note="sized in Kafka's 24-byte map entries: the default maps 1,000,000 keys."),
        "log_cleaner_max_keys", to_field=lambda size: size // _DEDUPE_ENTRY_BYTES,
        from_field=lambda keys: str(keys * _DEDUPE_ENTRY_BYTES),
    ),
    BrokerKey(
        Setting("process.roles", _LIST, "broker,controller",
                "The roles this node plays: KafkaLite is one combined broker and controller.", read_only=True),
    ),
    *(BrokerKey(setting, server=True) for setting in SERVER_SETTINGS),
    BrokerKey(
        Setting("broker.id", _I, None, "The id of this broker; node.id wins when both are set.", at_least(0),
                read_only=True),
        "node_id", precedence=1,
    ),
    BrokerKey(
        Setting("log.dir", _S, None, "The log directory when log.dirs is not set.", _one_directory, read_only=True),
        "data_dir", to_field=lambda text: Path(text.strip()), from_field=_path_or_none, precedence=1,
    ),
    BrokerKey(
        Setting("log.retention.minutes", _I, None, "The default retention in minutes; log.retention.ms wins.",
                read_only=True),
        topic_config="retention.ms", to_topic=lambda minutes: str(minutes * 60_000), precedence=1,
    ),
    BrokerKey(
        Setting("log.retention.hours", _I, "168", "The default retention in hours; the .ms and .minutes keys win.",
                read_only=True),
        topic_config="retention.ms", to_topic=lambda hours: str(hours * 3_600_000), precedence=2,
    ),
    BrokerKey(
        Setting("log.roll.hours", _I, "168", "The default age at which a segment rolls, in hours; log.roll.ms wins.",
                at_least(1), read_only=True),
        topic_config="segment.ms", to_topic=lambda hours: str(hours * 3_600_000), precedence=1,
    ),
    BrokerKey(
        Setting("log.roll.jitter.hours", _I, "0", "The default segment jitter in hours; log.roll.jitter.ms wins.",
                at_least(0), read_only=True, honoured=False),
        topic_config="segment.jitter.ms", to_topic=lambda hours: str(hours * 3_600_000), precedence=1,
    ),
    *(
        BrokerKey(Setting(name, kind, default, doc, at_least(minimum), read_only=True, honoured=False))
        for name, kind, default, doc, minimum in (
            ("default.replication.factor", _I, "1", "The replication factor of an auto-created topic.", 1),
            ("offsets.topic.replication.factor", _SHORT, "1", "The replication factor of the offsets topic.", 1),
            ("transaction.state.log.replication.factor", _SHORT, "1",
             "The replication factor of the transaction state topic.", 1),
            ("transaction.state.log.min.isr", _I, "1", "min.insync.replicas of the transaction state topic.", 1),
            ("share.coordinator.state.topic.replication.factor", _SHORT, "1",
             "The replication factor of the share-group state topic.", 1),
            ("share.coordinator.state.topic.min.isr", _SHORT, "1",
             "min.insync.replicas of the share-group state topic.", 1),
            ("num.network.threads", _I, "3", "Threads receiving requests and sending answers.", 1),
            ("num.io.threads", _I, "8", "Threads processing requests.", 1),
            ("num.recovery.threads.per.data.dir", _I, "2", "Threads recovering logs at start-up, per directory.", 1),
            ("num.replica.fetchers", _I, "1", "Threads fetching from leaders, per source broker.", 1),
            ("socket.send.buffer.bytes", _I, "102400", "SO_SNDBUF of the server's sockets (-1: OS default).", -1),
            ("socket.receive.buffer.bytes", _I, "102400", "SO_RCVBUF of the server's sockets (-1: OS default).", -1),
        )
    ),
    *(
        BrokerKey(Setting(name, kind, default, doc, read_only=True, honoured=False))
        for name, kind, default, doc in (
            ("controller.quorum.voters", _LIST, "", "The controller quorum's voters, id@host:port."),
            ("controller.quorum.bootstrap.servers", _LIST, "", "Where to find the controller quorum."),
            ("controller.listener.names", _S, None, "The listeners the controllers use."),
            ("inter.broker.listener.name", _S, None, "The listener brokers use to talk to each other."),
            ("broker.rack", _S, None, "The rack of this broker, for rack-aware replica placement."),
            ("auto.leader.rebalance.enable", _B, "true", "Move leadership back to preferred replicas."),
            ("delete.topic.enable", _B, "true", "Allow DeleteTopics."),
        )
    ),
]  # fmt: skip


def _topic_default_key(topic_name: str) -> BrokerKey:
    topic = TOPIC_SETTINGS[topic_name]
    setting = replace(
        topic,
        name=BROKER_SYNONYMS[topic_name],
        doc=f"The default of the topic config {topic_name}: {topic.doc}",
        read_only=True,
    )
    return BrokerKey(setting, topic_config=topic_name)


BROKER_SETTINGS: dict[str, BrokerKey] = {
    key.name: key for key in [*_OWN_SETTINGS, *(_topic_default_key(name) for name in TOPIC_SETTINGS)]
}
table([key.setting for key in BROKER_SETTINGS.values()])  # refuses a name listed twice
_FIELDS = {f.name for f in fields(BrokerConfig)}
for _key in BROKER_SETTINGS.values():
    assert _key.field is None or _key.field in _FIELDS, f"{_key.name} maps onto a missing field {_key.field}"


def broker_setting(name: str) -> BrokerKey:
    key = BROKER_SETTINGS.get(name)
    if key is None:
        raise InvalidConfigError(f"Unknown broker config name: {name}")
    return key


def load_properties(
    properties: Mapping[str, str], base: BrokerConfig | None = None
) -> tuple[BrokerConfig, dict[str, str]]:
    """`base` with every `key=value` of `properties` applied, each checked by its rule, and the settings that belong
    to the server (listeners, ...) apart. `InvalidConfigError` names the first unknown key or broken rule."""
    config = base or BrokerConfig()
    changes: dict[str, Any] = {}
    topic_defaults = dict(config.topic_defaults)
    server: dict[str, str] = {}
    set_by: dict[str, int] = {}  # target (field or topic config) → precedence of the key that set it
    for name, text in properties.items():
        key = broker_setting(name)
        value = key.setting.parse(text)
        target = key.field or key.topic_config
        if target is not None and set_by.get(target, key.precedence) < key.precedence:
            continue  # a key of higher precedence already set this value
        if key.field is not None:
            changes[key.field] = key.to_field(value)
        elif key.topic_config is not None:
            topic_value = key.to_topic(value) if key.to_topic is not None else text.strip()
            validate_config(key.topic_config, topic_value)
            topic_defaults[key.topic_config] = topic_value
        elif key.server:
            server[name] = text
        if target is not None:
            set_by[target] = key.precedence
    static = {**config.static_settings, **{name: text.strip() for name, text in properties.items()}}
    return replace(config, **changes, topic_defaults=topic_defaults, static_settings=static), server


_NUMBERS = (ConfigType.SHORT, ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE)


def check_broker_config(config: BrokerConfig) -> None:
    """Raise `InvalidConfigError` (naming the Kafka key and its rule) when a numeric field of a `BrokerConfig` built in
    Python breaks its setting's rule, or a broker-wide topic default breaks the topic config's."""
    for key in BROKER_SETTINGS.values():
        if key.field is not None and key.precedence == 0 and key.setting.type in _NUMBERS:
            text = key.from_field(getattr(config, key.field))
            if text is not None:
                key.setting.parse(text)
    for name, value in config.topic_defaults.items():
        validate_config(name, value)


def describe_broker(config: BrokerConfig, server: Mapping[str, str]) -> list[ConfigEntry]:
    """DescribeConfigs' rows for the BROKER resource: every setting of the table with its value and source."""
    return list(_broker_entries(config, server))


def _broker_entries(config: BrokerConfig, server: Mapping[str, str]) -> Iterator[ConfigEntry]:
    for key in BROKER_SETTINGS.values():
        setting = key.setting
        if key.server:  # the server's own settings: what it was started with, as it supplies them
            configured = setting.name in server or setting.name in config.static_settings
            value: str | None = server.get(setting.name, config.static_settings.get(setting.name, setting.default))
        elif setting.name in config.static_settings:
            value = config.static_settings[setting.name]
            configured = True
        elif key.field is not None and key.precedence == 0:
            value = key.from_field(getattr(config, key.field))
            configured = value != setting.default
        elif key.to_topic is not None or key.field is not None:  # a synonym not set: its own default
            value, configured = setting.default, False
        elif key.topic_config is not None:
            configured = key.topic_config in config.topic_defaults
            value = config.topic_defaults[key.topic_config] if configured else setting.default
        else:  # a cluster key a single broker has no use for: as set, or its default
            configured, value = False, setting.default
        hidden = setting.sensitive
        synonyms = [ConfigSynonym(setting.name, None if hidden else value, ConfigSource.STATIC_BROKER_CONFIG)]
        if not configured:
            synonyms.clear()
        if setting.default is not None:
            synonyms.append(
                ConfigSynonym(setting.name, None if hidden else setting.default, ConfigSource.DEFAULT_CONFIG)
            )
        yield ConfigEntry(
            setting.name,
            None if hidden else value,
            source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
            type=setting.type,
            doc=setting.documentation,
            read_only=setting.read_only,
            is_sensitive=hidden,
            synonyms=tuple(synonyms),
        )
