"""When a compacted log is cleaned, how much of it a cleaning may touch, and when tombstones go: Kafka's rules.

Sections of a compacted log, offsets growing to the right (Kafka's `LogCleanerManager`):

    log start ─ clean section ─┬─ first dirty ─ dirty section ─┬─ first uncleanable ─ ... ─ active segment
                               └ where the last cleaning ended └ the cleaner stops here

  * first dirty offset: the cleaner checkpoint, where the previous cleaning's offset map ended (never below the
    log start; a log never cleaned starts dirty at its log start).
  * first uncleanable offset: the base of the first segment a cleaning may not rewrite, the earliest of
    - the active segment (appends go there; it rolls by `segment.bytes`/`segment.ms`, see `policy.should_roll`),
    - the first segment not yet known durable (the engine's limit: its recovery point),
    - the first segment holding an open transaction's data (the engine is given the first unstable offset),
    - the first dirty segment holding a record younger than `min.compaction.lag.ms` (its largest timestamp).
    Cleanings rewrite whole segments, so this is always a segment base offset.
  * dirty ratio = dirty bytes / (clean bytes + dirty bytes), counting whole segments below the first uncleanable
    offset. A log is due when the ratio is at least `min.cleanable.dirty.ratio`; when its oldest dirty record
    (the first dirty segment's first batch timestamp) is older than `max.compaction.lag.ms`, whatever the ratio;
    or when a delete horizon stamped by an earlier cleaning has passed (tombstones wait to be dropped).
  * the cleaner takes, among the due logs, the one with the highest dirty ratio (Kafka's `grabFilthiestLog`).

Tombstones and transaction markers (KIP-534): the first cleaning that keeps one stamps its batch with a delete
horizon, the cleaning's time plus `delete.retention.ms`; a cleaning at or after the horizon drops it. So a consumer
that started reading from the log start before the horizon sees every delete.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kafkalite.storage.base import LogConfig
from kafkalite.storage.policy import ActiveSegmentStats

T = TypeVar("T")
INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class CleaningStats:
    """What the policy knows of one log at one moment (see the module docstring)."""

    first_dirty: int
    first_uncleanable: int
    cleanable_segments: int  # segments[:cleanable_segments] may be rewritten
    clean_bytes: int
    dirty_bytes: int
    must_clean: bool  # a dirty record is older than max.compaction.lag.ms
    horizon_due: bool  # an earlier cleaning's delete horizon has passed

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def cleaning_stats(
    config: LogConfig,
    segments: Sequence[ActiveSegmentStats],
    *,
    first_dirty: int,
    limit_offset: int,
    earliest_horizon: int | None,
    now_ms: int,
) -> CleaningStats | None:
    """The log's sections, or None when it is not compacted or has no segment a cleaning may rewrite.

    `limit_offset` is the engine's own bound (durable end, first unstable offset): no rewritten segment ends past it.
    """
    if not config.compact:
        return None
    count = 0
    clean_bytes = dirty_bytes = 0
    oldest_dirty = None
    for number, segment in enumerate(segments[:-1]):
        end = segments[number + 1].base_offset
        if end > limit_offset:
            break
        dirty = end > first_dirty
        if dirty and now_ms - segment.largest_timestamp < config.min_compaction_lag_ms:
            break
        count = number + 1
        if dirty:
            dirty_bytes += segment.size_bytes
            if oldest_dirty is None:
                first = segment.first_batch_max_timestamp
                oldest_dirty = first if first >= 0 else segment.largest_timestamp
        else:
            clean_bytes += segment.size_bytes
    if count == 0:
        return None
    must_clean = oldest_dirty is not None and now_ms - oldest_dirty > config.max_compaction_lag_ms
    return CleaningStats(
        first_dirty=first_dirty,
        first_uncleanable=segments[count].base_offset,
        cleanable_segments=count,
        clean_bytes=clean_bytes,
        dirty_bytes=dirty_bytes,
        must_clean=must_clean,
        horizon_due=earliest_horizon is not None and earliest_horizon <= now_ms,
    )


def is_due(config: LogConfig, stats: CleaningStats) -> bool:
    """Whether the log should be cleaned now (see the module docstring)."""
    if stats.horizon_due:
        return True
    if stats.dirty_bytes == 0:
        return False
    return stats.must_clean or stats.dirty_ratio >= config.min_cleanable_dirty_ratio


def dirtiest(candidates: Iterable[tuple[T, LogConfig, CleaningStats]]) -> tuple[T, CleaningStats] | None:
    """The due log with the highest dirty ratio (the first of equals), or None when none is due."""
    best: tuple[T, CleaningStats] | None = None
    for item, config, stats in candidates:
        if is_due(config, stats) and (best is None or stats.dirty_ratio > best[1].dirty_ratio):
            best = (item, stats)
    return best


def new_delete_horizon(config: LogConfig, now_ms: int) -> int:
    """The horizon a cleaning stamps on a batch that keeps a tombstone or marker for the first time."""
    return min(now_ms + config.delete_retention_ms, INT64_MAX)


def horizon_passed(horizon_ms: int, now_ms: int) -> bool:
    """A tombstone or marker stamped with `horizon_ms` may be dropped by a cleaning at `now_ms`."""
    return horizon_ms <= now_ms
