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
    retention_check_interval_s: float = 300.0  # log.retention.check.interval.ms
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 0
    topic_defaults: Mapping[str, str] = field(default_factory=dict)  # broker-wide overrides of topic config defaults
