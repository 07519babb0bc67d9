"""Per-topic configs, named as Kafka names them.

Topic configs are kept as strings (Kafka's wire and tools speak strings) and validated once, when set. Each known
key has a default, a parser that checks the value, and a note on whether KafkaLite honours it or only reports it
(replication settings are accepted for tool compatibility: a single broker always has exactly one replica).
Unknown keys are refused with `InvalidConfigError`, as Kafka refuses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from kafkalite.errors import InvalidConfigError

DEFAULT_SEGMENT_BYTES = 1 << 30
WEEK_MS = 7 * 24 * 3600 * 1000
DAY_MS = 24 * 3600 * 1000
LONG_MAX = (1 << 63) - 1


def _non_negative_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise ValueError("must be >= 0")
    return number


def _limit(value: str) -> int:
    """-1 means unlimited; otherwise a positive number."""
    number = int(value)
    if number < -1 or number == 0:
        raise ValueError("must be -1 (unlimited) or positive")
    return number


def _positive_int(value: str) -> int:
    number = int(value)
    if number <= 0:
        raise ValueError("must be > 0")
    return number


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return parse


def _cleanup_policy(value: str) -> str:
    """Kafka's list type: "delete", "compact", or both, comma-separated in either order; an empty list (which
    Kafka's list validator lets through) means neither: segments are kept forever and never cleaned."""
    parts = [part.strip() for part in value.split(",")] if value.strip() else []
    unknown = [part for part in parts if part not in ("delete", "compact")]
    if unknown or len(set(parts)) != len(parts):
        raise ValueError('must be "delete", "compact" or both, comma-separated')
    return value


def _ratio(value: str) -> float:
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise ValueError("must be between 0 and 1")
    return number


def _segment_bytes(value: str) -> int:
    number = int(value)
    if number < 14:  # Kafka's lower bound: room for one empty batch header after the log overhead
        raise ValueError("must be >= 14")
    return number


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    default: str
    parse: Callable[[str], object]
    doc: str
    read_only: bool = False


TOPIC_CONFIG_KEYS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        ConfigKey("retention.ms", str(WEEK_MS), _limit, "delete whole segments older than this; -1 keeps all"),
        ConfigKey("retention.bytes", "-1", _limit, "delete oldest segments above this partition size; -1: no limit"),
        ConfigKey("segment.bytes", str(DEFAULT_SEGMENT_BYTES), _segment_bytes, "roll the active segment past this"),
        ConfigKey("segment.ms", str(WEEK_MS), _positive_int, "roll the active segment after this age"),
        ConfigKey("index.interval.bytes", "4096", _non_negative_int, "log bytes between two offset-index entries"),
        ConfigKey("max.message.bytes", "1048588", _positive_int, "largest record batch a produce may append"),
        ConfigKey(
            "message.timestamp.type",
            "CreateTime",
            _one_of("CreateTime", "LogAppendTime"),
            "LogAppendTime stamps each batch with the broker's clock",
        ),
        ConfigKey(
            "cleanup.policy",
            "delete",
            _cleanup_policy,
            "delete: retention removes old segments; compact: the log cleaner keeps the latest record per key",
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio",
            "0.5",
            _ratio,
            "clean a compacted log once this share of its cleanable bytes is not yet cleaned",
        ),
        ConfigKey("min.compaction.lag.ms", "0", _non_negative_int, "records younger than this are never compacted"),
        ConfigKey(
            "max.compaction.lag.ms",
            str(LONG_MAX),
            _positive_int,
            "a record left uncompacted this long makes its log due for cleaning (and rolls the active segment)",
        ),
        ConfigKey(
            "delete.retention.ms",
            str(DAY_MS),
            _non_negative_int,
            "tombstones and transaction markers outlive the first cleaning that sees them by this long",
        ),
        ConfigKey("max.partition.messages", "-1", _limit, "KafkaLite: refuse produce past this many records"),
        ConfigKey("max.partition.bytes", "-1", _limit, "KafkaLite: refuse produce past this partition size"),
        ConfigKey("min.insync.replicas", "1", _positive_int, "accepted for compatibility; one broker, one replica"),
        ConfigKey("unclean.leader.election.enable", "false", _one_of("true", "false"), "accepted, no effect"),
        ConfigKey("compression.type", "producer", _one_of("producer"), "batches are stored as the producer sent"),
    )
}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One row of DescribeConfigs. `source`: 1 = set on the topic, 4 = broker override, 5 = default."""

    name: str
    value: str | None
    is_default: bool
    read_only: bool
    is_sensitive: bool
    source: int
    doc: str


SOURCE_TOPIC = 1
SOURCE_BROKER = 4
SOURCE_DEFAULT = 5


class TopicConfig:
    """The configs set on one topic, over the broker's defaults. Values are validated before they are stored."""

    def __init__(self, overrides: Mapping[str, str] | None = None, broker_defaults: Mapping[str, str] | None = None):
        self._broker_defaults = dict(broker_defaults or {})
        for name, value in self._broker_defaults.items():
            validate_config(name, value)
        self._overrides: dict[str, str] = {}
        self.update(overrides or {})

    @staticmethod
    def validated(changes: Mapping[str, str | None]) -> None:
        for name, value in changes.items():
            if value is not None:
                validate_config(name, value)
            elif name not in TOPIC_CONFIG_KEYS:
                raise InvalidConfigError(f"unknown topic config {name!r}")

    def update(self, changes: Mapping[str, str | None]) -> None:
        """Set (or, with None, reset to default) each key; all are validated before any is applied."""
        self.validated(changes)
        for name, value in changes.items():
            if value is None:
                self._overrides.pop(name, None)
            else:
                self._overrides[name] = value

    def overrides(self) -> dict[str, str]:
        return dict(self._overrides)

    def get(self, name: str) -> str:
        if name in self._overrides:
            return self._overrides[name]
        if name in self._broker_defaults:
            return self._broker_defaults[name]
        return TOPIC_CONFIG_KEYS[name].default

    def get_int(self, name: str) -> int:
        return int(self.get(name))

    def describe(self) -> list[ConfigEntry]:
        return list(self._entries())

    def _entries(self) -> Iterator[ConfigEntry]:
        for key in TOPIC_CONFIG_KEYS.values():
            if key.name in self._overrides:
                source = SOURCE_TOPIC
            elif key.name in self._broker_defaults:
                source = SOURCE_BROKER
            else:
                source = SOURCE_DEFAULT
            yield ConfigEntry(
                key.name,
                self.get(key.name),
                is_default=source == SOURCE_DEFAULT,
                read_only=key.read_only,
                is_sensitive=False,
                source=source,
                doc=key.doc,
            )

    @property
    def cleanup_policy(self) -> set[str]:
        """The parts of cleanup.policy: "delete", "compact", both, or none."""
        return {part.strip() for part in self.get("cleanup.policy").split(",") if part.strip()}

    @property
    def compacted(self) -> bool:
        """cleanup.policy holds "compact": records need a key (Kafka refuses keyless ones with INVALID_RECORD)."""
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.get("message.timestamp.type") == "LogAppendTime"


def validate_config(name: str, value: str) -> None:
    key = TOPIC_CONFIG_KEYS.get(name)
    if key is None:
        raise InvalidConfigError(f"unknown topic config {name!r}")
    try:
        key.parse(value)
    except ValueError as exc:
        raise InvalidConfigError(f"invalid value {value!r} for topic config {name!r}: {exc}") from None
