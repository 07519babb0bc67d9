"""AlterReplicaLogDirs (API key 34), versions 1-2.

v1 is the oldest Kafka 4 serves (v0 is gone) · v2 is the first flexible version.

KafkaLite has one log directory (see `describe_log_dirs.log_dir`), so every replica already lives where it can live.
As Kafka answers, per partition: a path that is not a log directory of this broker gets LOG_DIR_NOT_FOUND; an
unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION; a partition asked into the directory it is in gets
NONE and nothing moves. Paths are compared absolute (a relative one is taken from the broker's working directory,
as Kafka's `File.getAbsolutePath` takes it), symbolic links resolved.
"""

from __future__ import annotations

import os
from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import NONE, UNKNOWN_TOPIC_OR_PARTITION
from kafkalite.server.handlers.describe_log_dirs import MEMORY_LOG_DIR, log_dir

LOG_DIR_NOT_FOUND = 57


def _is_our_dir(ctx: RequestContext, path: str) -> bool:
    ours = log_dir(ctx.broker)
    if ours == MEMORY_LOG_DIR:
        return False  # a memory-only broker has no directory a replica could be moved to
    try:
        return os.path.realpath(path) == ours
    except ValueError:  # an embedded NUL: no such path
        return False


@handles(ApiKey.ALTER_REPLICA_LOG_DIRS, versions=range(1, 3))
async def alter_replica_log_dirs(ctx: RequestContext, req: Any) -> Any:
    results: dict[str, list[Any]] = {}
    for directory in req.dirs:
        ours = _is_our_dir(ctx, directory.path)
        for requested in directory.topics:
            topic = ctx.broker.topics.get(requested.name)
            answers = results.setdefault(requested.name, [])
            for index in requested.partitions:
                if not ours:
                    code = LOG_DIR_NOT_FOUND
                elif topic is None or not 0 <= index < len(topic.partitions):
                    code = UNKNOWN_TOPIC_OR_PARTITION
                else:
                    code = NONE
                answers.append(ctx.build("AlterReplicaLogDirPartitionResult", partition_index=index, error_code=code))
    return ctx.build(
        "AlterReplicaLogDirsResponse",
        throttle_time=0,
        results=[
            ctx.build("AlterReplicaLogDirTopicResult", topic_name=name, partitions=partitions)
            for name, partitions in results.items()
        ],
    )
