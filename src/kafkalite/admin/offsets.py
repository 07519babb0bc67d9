"""Partition offsets through ListOffsets: log start, log end (the next offset to be written), and by timestamp.

`messages = end - start` counts offsets, which equals the record count except where compaction, transaction
markers or aborted records leave gaps; the tools say "messages" for it, as kcat and Kafka's own tools do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kafkalite.admin.connection import Cluster

Key = tuple[str, int]  # (topic, partition)
EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class Watermarks:
    start: int  # the log start offset: the oldest offset still readable
    end: int  # the log end offset: one past the last record

    @property
    def messages(self) -> int:
        return max(0, self.end - self.start)


def _list(cluster: Cluster, specs: Mapping[Key, OffsetSpec], isolation: IsolationLevel) -> dict[Key, int]:
    if not specs:
        return {}
    futures = cluster.admin.list_offsets(
        {TopicPartition(topic, partition): spec for (topic, partition), spec in specs.items()},
        isolation_level=isolation,
        request_timeout=cluster.settings.timeout_s,
    )
    results = cluster.wait(futures, "list offsets of")
    return {(tp.topic, tp.partition): info.offset for tp, info in results.items()}


def watermarks(cluster: Cluster, partitions: Iterable[Key], *, committed_only: bool = False) -> dict[Key, Watermarks]:
    """Start and end offsets of every partition; `committed_only` ends at the last stable offset instead."""
    keys = list(partitions)
    isolation = IsolationLevel.READ_COMMITTED if committed_only else IsolationLevel.READ_UNCOMMITTED
    starts = _list(cluster, dict.fromkeys(keys, EARLIEST), isolation)
    ends = _list(cluster, dict.fromkeys(keys, LATEST), isolation)
    return {key: Watermarks(starts[key], ends[key]) for key in keys}


def offsets_for_time(cluster: Cluster, partitions: Iterable[Key], timestamp_ms: int) -> dict[Key, int]:
    """The first offset whose record timestamp is >= `timestamp_ms`, or the log end offset when there is none."""
    keys = list(partitions)
    found = _list(cluster, dict.fromkeys(keys, OffsetSpec.for_timestamp(timestamp_ms)), IsolationLevel.READ_UNCOMMITTED)
    missing = [key for key, offset in found.items() if offset < 0]
    if missing:
        ends = _list(cluster, dict.fromkeys(missing, LATEST), IsolationLevel.READ_UNCOMMITTED)
        found.update(ends)
    return found
