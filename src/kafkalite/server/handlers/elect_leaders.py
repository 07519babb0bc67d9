"""ElectLeaders (API key 43), versions 0-2.

v1 adds election_type (0 preferred, 1 unclean) and a top-level error_code · v2 is the first flexible version.

One broker is the preferred and only leader of every partition, so no election is ever needed. As a single-broker
Kafka answers: each named partition gets ELECTION_NOT_NEEDED, an unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION (with a message naming it). A null topic_partitions asks for every partition; Kafka then
answers every topic and leaves out the partitions that need no election, so every topic comes back with no
partitions. An election type other than 0 or 1 is INVALID_REQUEST for every named partition and at the top.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION

ELECTION_NOT_NEEDED = 84
PREFERRED, UNCLEAN = 0, 1


def _outcome(ctx: RequestContext, topic_name: str, index: int) -> tuple[int, str | None]:
    topic = ctx.broker.topics.get(topic_name)
    if topic is None:
        return UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic_name}"
    if not 0 <= index < len(topic.partitions):
        return UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic_name}-{index}"
    return ELECTION_NOT_NEEDED, None


def _results(ctx: RequestContext, topics: Any, refusal: str | None) -> list[Any]:
    if topics is None:  # every partition: none needs an election, so each topic is answered empty
        return [
            ctx.build("ReplicaElectionResult", topic=name, partition_result=[]) for name in sorted(ctx.broker.topics)
        ]
    results = []
    for requested in topics:
        partitions = []
        for index in requested.partitions:
            code, message = (INVALID_REQUEST, refusal) if refusal else _outcome(ctx, requested.topic, index)
            partitions.append(ctx.build("PartitionResult", partition_id=index, error_code=code, error_message=message))
        results.append(ctx.build("ReplicaElectionResult", topic=requested.topic, partition_result=partitions))
    return results


@handles(ApiKey.ELECT_LEADERS, versions=range(0, 3))
async def elect_leaders(ctx: RequestContext, req: Any) -> Any:
    election_type = getattr(req, "election_type", PREFERRED)
    refusal = None if election_type in (PREFERRED, UNCLEAN) else f"Unknown election type {election_type}"
    return ctx.build(
        "ElectLeadersResponse",
        throttle_time=0,
        error_code=INVALID_REQUEST if refusal else 0,
        replica_election_results=_results(ctx, req.topic_partitions, refusal),
    )
