"""DescribeLogDirs (API key 35), versions 1-5.

v1 is the oldest Kafka 4 serves (v0 is gone) · v2 is the first flexible version · v3 adds a top-level error_code ·
v4 adds each directory's total_bytes and usable_bytes · v5 adds is_cordoned.

KafkaLite keeps every partition in one log directory: the broker's `data_dir` (its absolute path), or, for a broker
that keeps its logs in memory, one directory named ":memory:" with unknown volume sizes (-1). Each partition is
listed with its real size in bytes (every segment, as Kafka counts it) and an offset lag of 0: with one replica the
log end offset is the high watermark. A null topics array asks for every partition; otherwise only the named
partitions that exist are listed, and unknown topics or partitions are left out, as Kafka leaves them out.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from typing import Any

from kafkalite.broker import Broker, Topic
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles

MEMORY_LOG_DIR = ":memory:"


def log_dir(broker: Broker) -> str:
    """The one log directory of `broker`, as DescribeLogDirs and AlterReplicaLogDirs name it."""
    return MEMORY_LOG_DIR if broker.data_dir is None else str(broker.data_dir.resolve())


def _wanted(broker: Broker, topics: Any) -> Iterable[tuple[Topic, list[int]]]:
    if topics is None:
        for topic in broker.topics.values():
            yield topic, list(range(len(topic.partitions)))
        return
    seen: set[str] = set()
    for requested in topics:
        known = broker.topics.get(requested.topic)
        if known is None or known.name in seen:
            continue
        seen.add(known.name)
        count = len(known.partitions)
        yield known, sorted({p for p in requested.partitions if 0 <= p < count})


@handles(ApiKey.DESCRIBE_LOG_DIRS, versions=range(1, 6))
async def describe_log_dirs(ctx: RequestContext, req: Any) -> Any:
    topics = [
        ctx.build(
            "DescribeLogDirsTopic",
            name=topic.name,
            partitions=[
                ctx.build(
                    "DescribeLogDirsPartition",
                    partition_index=index,
                    partition_size=topic.partitions[index].log.size_bytes,
                    offset_lag=0,
                    is_future_key=False,
                )
                for index in indexes
            ],
        )
        for topic, indexes in _wanted(ctx.broker, req.topics)
        if indexes
    ]
    total = usable = -1
    if ctx.broker.data_dir is not None:
        usage = shutil.disk_usage(ctx.broker.data_dir)  # one statvfs(2): no I/O worth a thread
        total, usable = usage.total, usage.free
    result = ctx.build(
        "DescribeLogDirsResult",
        error_code=0,
        log_dir=log_dir(ctx.broker),
        topics=topics,
        total_bytes=total,
        usable_bytes=usable,
        is_cordoned=False,
    )
    return ctx.build("DescribeLogDirsResponse", throttle_time=0, error_code=0, results=[result])
