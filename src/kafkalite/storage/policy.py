"""When to roll the active segment and which old segments retention deletes: Kafka's rules, shared by both engines.

Rolling (Kafka's `LogSegment.shouldRoll`): a non-empty active segment is rolled before an append when
  * the batch would take it past `segment_bytes`, or
  * the batch's max timestamp is more than `segment_ms` past the max timestamp of the segment's first batch (when
    batches carry no timestamp, the segment's creation time on the log's clock is compared with now), or
  * a relative offset or a file position would no longer fit the 4-byte index fields.
On a compacted log the age limit is min(`segment_ms`, `max_compaction_lag_ms`) (Kafka's `maxSegmentMs`), so a dirty
record never waits in the active segment, which the cleaner does not touch, longer than the lag allows.

Retention (Kafka's `deleteRetentionMsBreachedSegments` then `deleteRetentionSizeBreachedSegments`) deletes a prefix of
whole segments, never the active one, and only when the cleanup policy holds "delete": first those whose largest
timestamp is more than `retention_ms` old, then, while the log is bigger than `retention_bytes`, the oldest segments
whose removal keeps it at or above that size.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from kafkalite.storage.base import LogConfig

INT32_MAX = (1 << 31) - 1
NO_TIMESTAMP = -1
DEFAULT_CONFIG = LogConfig()  # frozen, so one shared default is safe


def wall_clock_ms() -> int:
    """The default clock of both engines; tests pass their own."""
    return time.time_ns() // 1_000_000


class SegmentStats(Protocol):
    """What retention needs to know about a segment."""

    @property
    def size_bytes(self) -> int: ...

    @property
    def largest_timestamp(self) -> int:
        """Largest batch max timestamp, or the last-modified time when no batch carries a timestamp."""
        ...


class ActiveSegmentStats(SegmentStats, Protocol):
    """What rolling needs to know about the active segment (and retention about any segment)."""

    @property
    def base_offset(self) -> int: ...

    @property
    def first_batch_max_timestamp(self) -> int:
        """Max timestamp of the segment's first batch, or NO_TIMESTAMP when it is empty or carries none."""
        ...

    @property
    def created_ms(self) -> int: ...


def should_roll(
    config: LogConfig,
    active: ActiveSegmentStats,
    *,
    batch_size: int,
    batch_max_timestamp: int,
    batch_last_offset: int,
    now_ms: int,
) -> bool:
    """True when the batch about to be appended belongs in a new segment rather than in `active`."""
    segment_size = active.size_bytes
    if segment_size == 0:
        return False
    if segment_size > config.segment_bytes - batch_size or segment_size > INT32_MAX - batch_size:
        return True
    if batch_last_offset - active.base_offset > INT32_MAX:
        return True
    max_age = max_segment_ms(config)
    first_batch_max_timestamp = active.first_batch_max_timestamp
    if first_batch_max_timestamp >= 0:
        return batch_max_timestamp - first_batch_max_timestamp > max_age
    return now_ms - active.created_ms > max_age


def max_segment_ms(config: LogConfig) -> int:
    """The active segment's age limit (see the module docstring)."""
    if config.compact and config.max_compaction_lag_ms > 0:
        return min(config.segment_ms, config.max_compaction_lag_ms)
    return config.segment_ms


def count_expired_segments(config: LogConfig, segments: Sequence[SegmentStats], now_ms: int) -> int:
    """How many of the oldest segments retention deletes; the last (active) segment is never counted."""
    if not config.delete:
        return 0
    deletable = len(segments) - 1
    expired = 0
    if config.retention_ms >= 0:
        while expired < deletable and now_ms - segments[expired].largest_timestamp > config.retention_ms:
            expired += 1
    if config.retention_bytes >= 0:
        excess = sum(segment.size_bytes for segment in segments[expired:]) - config.retention_bytes
        while expired < deletable and excess - segments[expired].size_bytes >= 0:
            excess -= segments[expired].size_bytes
            expired += 1
    return expired
