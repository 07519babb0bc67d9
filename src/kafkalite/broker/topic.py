"""A topic: a name, a stable id, its configs, and N partitions numbered 0..N-1.

Topic names follow Kafka's rules: 1–249 characters from [a-zA-Z0-9._-], not "." or "..". Names starting with "__"
are reserved for internal topics (`__consumer_offsets`); users cannot create them.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from kafkalite.broker.partition import Partition
from kafkalite.config import TopicConfig
from kafkalite.errors import InvalidTopicError
from kafkalite.storage import LogConfig

MAX_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str, *, internal: bool = False) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidTopicError("topic name must be a non-empty string")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(f"topic name is longer than {MAX_NAME_LENGTH} characters: {name[:40]}...")
    if name in (".", "..") or not _LEGAL_NAME.fullmatch(name):
        raise InvalidTopicError(f"illegal topic name {name!r}: use only a-z, A-Z, 0-9, '.', '_' and '-'")
    if name.startswith("__") and not internal:
        raise InvalidTopicError(f"topic names starting with '__' are reserved for internal topics: {name!r}")


def log_settings(config: TopicConfig) -> LogConfig:
    """The part of a topic's configs its partition logs act on."""
    return LogConfig(
        segment_bytes=config.get_int("segment.bytes"),
        segment_ms=config.get_int("segment.ms"),
        retention_ms=config.get_int("retention.ms"),
        retention_bytes=config.get_int("retention.bytes"),
        index_interval_bytes=config.get_int("index.interval.bytes"),
        delete="delete" in config.cleanup_policy,
        compact=config.compacted,
        min_cleanable_dirty_ratio=float(config.get("min.cleanable.dirty.ratio")),
        min_compaction_lag_ms=config.get_int("min.compaction.lag.ms"),
        max_compaction_lag_ms=config.get_int("max.compaction.lag.ms"),
        delete_retention_ms=config.get_int("delete.retention.ms"),
    )


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    config: TopicConfig
    partitions: list[Partition]
    is_internal: bool = False

    def __repr__(self) -> str:
        return f"Topic({self.name!r}, partitions={len(self.partitions)})"
