"""Every topic config Kafka 4 defines, under its Kafka name, and one topic's configs over the broker's defaults.

`TOPIC_SETTINGS` is the table: Kafka's type, default, rule and documentation for each key, whether KafkaLite acts on
it, and `BROKER_SYNONYMS`, the broker setting that gives its cluster-wide default (`retention.ms` ←
`log.retention.ms`). CreateTopics, AlterConfigs and IncrementalAlterConfigs validate through it; DescribeConfigs
describes from it. Unknown keys are refused with `InvalidConfigError`, as Kafka refuses them.

Topic configs are kept as the strings they were set with and validated once, when set: every change of a request is
checked (each value by its rule, then the combination, as Kafka checks `min.compaction.lag.ms` against
`max.compaction.lag.ms`) before any is applied.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalite.config.schema import (
    INT64_MAX,
    ConfigSource,
    ConfigType,
    Setting,
    at_least,
    between,
    in_range_or,
    list_of,
    one_of,
    table,
)
from kafkalite.errors import InvalidConfigError

DEFAULT_SEGMENT_BYTES = 1 << 30
WEEK_MS = 7 * 24 * 3600 * 1000
LONG_MAX = str(INT64_MAX)

_GENERATIONS = itertools.count(1)  # `TopicConfig.generation`: one sequence for every config of the process
_REPLICATION = "One broker holds the only replica of every partition."
_FLUSH = "KafkaLite syncs by its own fsync policy (every acks=all produce is durable before it is answered)."
_TIERED = "KafkaLite has no tiered storage."

B, S, INT, L, D = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE
LIST = ConfigType.LIST


def _limit(value: object) -> None:
    if not isinstance(value, int) or value < -1 or value == 0:
        raise ValueError("Value must be -1 (no limit) or positive")


def _no_tiered_storage(value: object) -> None:
    if value is True:  # Kafka's answer on a broker whose remote.log.storage.system.enable is false
        raise ValueError("Tiered Storage functionality is disabled in the broker")


TOPIC_SETTINGS: dict[str, Setting] = table(
    [
        Setting(
            "cleanup.policy", LIST, "delete",
            "The retention policy of old log segments: \"delete\" discards them by time or size, \"compact\" keeps "
            "the latest value of each key (log compaction); both may be given, or neither (segments are kept).",
            list_of("compact", "delete"),
        ),
        Setting(
            "compression.type", S, "producer",
            "The final compression type of the topic's batches: a codec, \"uncompressed\", or \"producer\" to keep "
            "the codec the producer chose.",
            one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
            note="batches are always stored as the producer compressed them, whatever codec is named here.",
        ),
        Setting("compression.gzip.level", INT, "-1", "The compression level when compression.type is gzip.",
                in_range_or(-1, 1, 9), honoured=False),
        Setting("compression.lz4.level", INT, "9", "The compression level when compression.type is lz4.",
                between(1, 17), honoured=False),
        Setting("compression.zstd.level", INT, "3", "The compression level when compression.type is zstd.",
                between(-131072, 22), honoured=False),
        Setting("delete.retention.ms", L, "86400000",
                "How long delete tombstones are kept on a compacted topic after cleaning.", at_least(0)),
        Setting("file.delete.delay.ms", L, "60000", "How long to wait before deleting a file from the filesystem.",
                at_least(0), honoured=False),
        Setting("flush.messages", L, LONG_MAX, "Force an fsync of the log after this many messages.", at_least(1),
                honoured=False, note=_FLUSH),
        Setting("flush.ms", L, LONG_MAX, "Force an fsync of the log after this much time.", at_least(0),
                honoured=False, note=_FLUSH),
        Setting("follower.replication.throttled.replicas", LIST, "",
                "Replicas whose log replication is throttled on the follower side.", honoured=False, note=_REPLICATION),
        Setting("index.interval.bytes", INT, "4096", "Log bytes between two offset-index entries.", at_least(0)),
        Setting("leader.replication.throttled.replicas", LIST, "",
                "Replicas whose log replication is throttled on the leader side.", honoured=False, note=_REPLICATION),
        Setting("local.retention.bytes", L, "-2", "Bytes kept locally before tiering (-2: retention.bytes).",
                at_least(-2), honoured=False, note=_TIERED),
        Setting("local.retention.ms", L, "-2", "Time kept locally before tiering (-2: retention.ms).",
                at_least(-2), honoured=False, note=_TIERED),
        Setting("max.compaction.lag.ms", L, LONG_MAX,
                "The longest a message stays ineligible for compaction.", at_least(1)),
        Setting("max.message.bytes", INT, "1048588", "The largest record batch size allowed.", at_least(0)),
        Setting("message.timestamp.after.max.ms", L, "3600000",
                "How far a CreateTime timestamp may be ahead of the broker's clock.", at_least(0), honoured=False),
        Setting("message.timestamp.before.max.ms", L, LONG_MAX,
                "How far a CreateTime timestamp may be behind the broker's clock.", at_least(0), honoured=False),
        Setting("message.timestamp.type", S, "CreateTime",
                "Whether a message's timestamp is its creation time or the broker's append time.",
                one_of("CreateTime", "LogAppendTime")),
        Setting("min.cleanable.dirty.ratio", D, "0.5",
                "The least share of the log that must be uncleaned before the log compactor cleans it.",
                between(0, 1)),
        Setting("min.compaction.lag.ms", L, "0", "The least time a message stays uncompacted.", at_least(0)),
        Setting("min.insync.replicas", INT, "1", "The fewest replicas that must acknowledge an acks=all write.",
                at_least(1), honoured=False, note=_REPLICATION),
        Setting("preallocate", B, "false", "Preallocate the file of a new log segment.", honoured=False),
        Setting("remote.log.copy.disable", B, "false", "Stop copying the topic's segments to tiered storage.",
                honoured=False, note=_TIERED),
        Setting("remote.log.delete.on.disable", B, "false",
                "Delete the topic's tiered data when tiered storage is turned off.", honoured=False, note=_TIERED),
        Setting("remote.storage.enable", B, "false", "Tier the topic's closed segments to remote storage.",
                _no_tiered_storage, honoured=False, note=_TIERED),
        Setting("retention.bytes", L, "-1",
                "The largest a partition may grow before old segments are deleted; -1: no limit.", at_least(-1)),
        Setting("retention.ms", L, str(WEEK_MS),
                "How long a segment is kept before it is deleted; -1: no time limit.", at_least(-1)),
        Setting("segment.bytes", INT, str(DEFAULT_SEGMENT_BYTES), "The size at which the active segment rolls.",
                at_least(14)),
        Setting("segment.index.bytes", INT, "10485760", "The size of a segment's offset index file.", at_least(4),
                honoured=False, note="indexes grow as entries are added."),
        Setting("segment.jitter.ms", L, "0", "The most random jitter subtracted from segment.ms.", at_least(0),
                honoured=False),
        Setting("segment.ms", L, str(WEEK_MS), "The age at which the active segment rolls.", at_least(1)),
        Setting("unclean.leader.election.enable", B, "false",
                "Whether a replica outside the ISR may become leader.", honoured=False, note=_REPLICATION),
        Setting("max.partition.messages", L, "-1",
                "KafkaLite: the most records a partition may hold; a produce past it is refused with a retriable "
                "error; -1: no limit.", _limit),
        Setting("max.partition.bytes", L, "-1",
                "KafkaLite: the largest a partition may grow; a produce past it is refused with a retriable error; "
                "-1: no limit.", _limit),
    ]
)  # fmt: skip

BROKER_SYNONYMS: dict[str, str] = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "follower.replication.throttled.replicas": "follower.replication.throttled.replicas",
    "index.interval.bytes": "log.index.interval.bytes",
    "leader.replication.throttled.replicas": "leader.replication.throttled.replicas",
    "local.retention.bytes": "log.local.retention.bytes",
    "local.retention.ms": "log.local.retention.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.type": "log.message.timestamp.type",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "min.insync.replicas": "min.insync.replicas",
    "preallocate": "log.preallocate",
    "remote.log.copy.disable": "remote.log.copy.disable",
    "remote.log.delete.on.disable": "remote.log.delete.on.disable",
    "remote.storage.enable": "remote.log.storage.system.enable",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.index.bytes": "log.index.size.max.bytes",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.ms": "log.roll.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "max.partition.messages": "log.max.partition.messages",
    "max.partition.bytes": "log.max.partition.bytes",
}
"""Topic config → the broker setting holding its cluster-wide default (Kafka's `LogConfig` synonyms)."""


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One row of DescribeConfigs (and of CreateTopics' answer from v5)."""

    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    doc: str
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = field(default=())

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


def topic_setting(name: str) -> Setting:
    setting = TOPIC_SETTINGS.get(name)
    if setting is None:
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    return setting


def validate_config(name: str, value: str) -> None:
    """Refuse an unknown topic config or a value that breaks its rule, with a message naming both."""
    topic_setting(name).parse(value)


def _check_combination(values: Mapping[str, str]) -> None:
    """Rules across keys, checked on the topic's effective configs after a change (Kafka's `validateValues`)."""
    min_lag = int(values["min.compaction.lag.ms"])
    max_lag = int(values["max.compaction.lag.ms"])
    if min_lag > max_lag:
        raise InvalidConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > max.compaction.lag.ms ({max_lag})"
        )


class TopicConfig:
    """The configs set on one topic, over the broker's defaults. Values are validated before they are stored."""

    def __init__(self, overrides: Mapping[str, str] | None = None, broker_defaults: Mapping[str, str] | None = None):
        self._broker_defaults = dict(broker_defaults or {})
        for name, value in self._broker_defaults.items():
            validate_config(name, value)
        self._overrides: dict[str, str] = {}
        # Parsed values the produce path asks for on every request (limits, the cleanup policy), dropped on update.
        self._parsed: dict[str, Any] = {}
        # Moves on every update, and no two configs share one: whoever keeps values read from this config (a
        # partition's append limits) reads them again once it differs from what they were read at.
        self.generation = 0
        self.update(overrides or {})

    @staticmethod
    def validated(changes: Mapping[str, str | None]) -> None:
        """Raise `InvalidConfigError` unless every key is known and every value (None: back to the default) keeps its
        rule. The rules across keys need the topic's other values: `check_changes` applies them too."""
        for name, value in changes.items():
            if value is None:
                topic_setting(name)
            else:
                validate_config(name, value)

    def check_changes(self, changes: Mapping[str, str | None]) -> None:
        """Raise `InvalidConfigError` unless every change may be applied to this topic, the changes together."""
        self.validated(changes)
        after = {**self._overrides, **changes}
        _check_combination({name: self._effective(name, after) for name in TOPIC_SETTINGS})

    def update(self, changes: Mapping[str, str | None]) -> None:
        """Set (or, with None, reset to default) each key; all are validated before any is applied."""
        self.check_changes(changes)
        for name, value in changes.items():
            if value is None:
                self._overrides.pop(name, None)
            else:
                self._overrides[name] = value
        self._parsed.clear()
        self.generation = next(_GENERATIONS)

    def overrides(self) -> dict[str, str]:
        return dict(self._overrides)

    def get(self, name: str) -> str:
        return self._effective(name, self._overrides)

    def _effective(self, name: str, overrides: Mapping[str, str | None]) -> str:
        value = overrides.get(name)
        if value is not None:
            return value
        if name in self._broker_defaults:
            return self._broker_defaults[name]
        default = TOPIC_SETTINGS[name].default
        assert default is not None  # every topic config has a default
        return default

    def get_int(self, name: str) -> int:
        value = self._parsed.get(name)  # keyed by the config name; the derived flags below use dotless keys
        if value is None:
            value = self._parsed[name] = int(self.get(name))
        return int(value)

    def describe(self) -> list[ConfigEntry]:
        return list(self._entries())

    def _entries(self) -> Iterator[ConfigEntry]:
        for setting in TOPIC_SETTINGS.values():
            broker_name = BROKER_SYNONYMS[setting.name]
            synonyms: list[ConfigSynonym] = []
            if setting.name in self._overrides:
                synonyms.append(
                    ConfigSynonym(setting.name, self._overrides[setting.name], ConfigSource.DYNAMIC_TOPIC_CONFIG)
                )
            if setting.name in self._broker_defaults:
                synonyms.append(
                    ConfigSynonym(broker_name, self._broker_defaults[setting.name], ConfigSource.STATIC_BROKER_CONFIG)
                )
            synonyms.append(ConfigSynonym(broker_name, setting.default, ConfigSource.DEFAULT_CONFIG))
            yield ConfigEntry(
                setting.name,
                self.get(setting.name),
                source=synonyms[0].source,
                type=setting.type,
                doc=setting.documentation,
                read_only=setting.read_only,
                is_sensitive=setting.sensitive,
                synonyms=tuple(synonyms),
            )

    @property
    def cleanup_policy(self) -> set[str]:
        """The parts of cleanup.policy: "delete", "compact", both, or none."""
        return {part.strip() for part in self.get("cleanup.policy").split(",") if part.strip()}

    @property
    def compacted(self) -> bool:
        """cleanup.policy holds "compact": records need a key (Kafka refuses keyless ones with INVALID_RECORD)."""
        value = self._parsed.get("compacted")
        if value is None:
            value = self._parsed["compacted"] = "compact" in self.cleanup_policy
        return bool(value)

    @property
    def log_append_time(self) -> bool:
        value = self._parsed.get("log_append_time")
        if value is None:
            value = self._parsed["log_append_time"] = self.get("message.timestamp.type") == "LogAppendTime"
        return bool(value)
