"""DescribeQuorum (API key 55), versions 0-2 (flexible).

v1 adds each replica's last_fetch_timestamp and last_caught_up_timestamp · v2 adds error_message, each replica's
replica_directory_id and the voters' endpoints (`nodes`).

KafkaLite is one combined broker and controller: the metadata quorum of `__cluster_metadata` partition 0 has one
voter, this node, which leads it at epoch 1 (the one election of a single voter) and has no observers. KafkaLite keeps
no metadata log; the log end offset and high watermark it reports are the number of metadata changes (topics
created, deleted, grown or reconfigured) since the broker started, and the replica directory id is the zero UUID,
as Kafka reports for a static voter. As Kafka answers, a request that does not name exactly `__cluster_metadata`
partition 0 gets UNKNOWN_TOPIC_OR_PARTITION at the top and no topics.
"""

from __future__ import annotations

import time
from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1


def _names_the_metadata_partition(req: Any) -> bool:
    topics: list[Any] = list(req.topics)
    if len(topics) != 1 or topics[0].topic_name != METADATA_TOPIC:
        return False
    partitions: list[Any] = list(topics[0].partitions)
    return len(partitions) == 1 and partitions[0].partition_index == 0


@handles(ApiKey.DESCRIBE_QUORUM, versions=range(0, 3))
async def describe_quorum(ctx: RequestContext, req: Any) -> Any:
    if not _names_the_metadata_partition(req):
        return ctx.build(
            "DescribeQuorumResponse", error_code=UNKNOWN_TOPIC_OR_PARTITION, error_message=None, topics=[], nodes=[]
        )
    node = ctx.server.node_id
    end_offset = ctx.broker.metadata_changes
    now_ms = int(time.time() * 1000)
    voter = ctx.build(
        "ReplicaState",
        replica_id=node,
        replica_directory_id=ZERO_UUID,
        log_end_offset=end_offset,
        last_fetch_timestamp=now_ms,
        last_caught_up_timestamp=now_ms,
    )
    partition = ctx.build(
        "PartitionData",
        partition_index=0,
        error_code=0,
        error_message=None,
        leader_id=node,
        leader_epoch=LEADER_EPOCH,
        high_watermark=end_offset,
        current_voters=[voter],
        observers=[],
    )
    nodes = []
    if ctx.version >= 2:
        listener = ctx.build("Listener", name="PLAINTEXT", host=ctx.server.host, port=ctx.server.port)
        nodes = [ctx.build("Node", node_id=node, listeners=[listener])]
    return ctx.build(
        "DescribeQuorumResponse",
        error_code=0,
        error_message=None,
        topics=[ctx.build("TopicData", topic_name=METADATA_TOPIC, partitions=[partition])],
        nodes=nodes,
    )
