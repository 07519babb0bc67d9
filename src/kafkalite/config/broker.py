"""Broker settings, named after Kafka's broker configs; `kafkalite serve` flags map onto these fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Everything `Broker` needs to start; `kafkalite serve` flags map onto these fields."""

    data_dir: Path | None = None  # None: memory-only storage, nothing survives the process
    node_id: int = 0
    fsync: bool = True  # False: acks=all is answered after write(), for throwaway test brokers
    auto_create_topics: bool = True  # auto.create.topics.enable
    default_partitions: int = 1  # num.partitions
    offsets_partitions: int = 1  # partitions of __consumer_offsets
    offsets_segment_bytes: int = 100 * 1024 * 1024  # offsets.topic.segment.bytes
    retention_check_interval_s: float = 300.0  # log.retention.check.interval.ms
    log_cleaner_enable: bool = True  # log.cleaner.enable
    log_cleaner_backoff_s: float = 15.0  # log.cleaner.backoff.ms: the pause when no log needs cleaning
    log_cleaner_io_max_bytes_per_second: float | None = None  # log.cleaner.io.max.bytes.per.second (None: no limit)
    log_cleaner_max_keys: int = 1_000_000  # keys one cleaning maps (Kafka: log.cleaner.dedupe.buffer.size, in bytes)
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 0
    topic_defaults: Mapping[str, str] = field(default_factory=dict)  # broker-wide overrides of topic config defaults
