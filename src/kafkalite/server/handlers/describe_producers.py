"""DescribeProducers (API key 61), version 0 (KIP-664; flexible).

Per requested partition, the producers the partition knows: producer id and epoch, last sequence and timestamp of
their batches, the coordinator epoch of the last marker written for them (-1 before any; this broker's coordinator
writes 0, as the one coordinator it has always had), and the offset
where their open transaction began in this partition (-1 when none is open). An unknown topic or partition answers
UNKNOWN_TOPIC_OR_PARTITION for it.
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code, error_message


def _partition(ctx: RequestContext, topic: str, index: int) -> Any:
    try:
        partition = ctx.broker.partition(topic, index)
    except KafkaLiteError as e:
        return ctx.build(
            "PartitionResponse",
            partition_index=index,
            error_code=error_code(e),
            error_message=error_message(e),
            active_producers=[],
        )
    producers = [
        ctx.build(
            "ProducerState",
            producer_id=state.producer_id,
            producer_epoch=state.producer_epoch,
            last_sequence=state.last_sequence,
            last_timestamp=state.last_timestamp,
            coordinator_epoch=state.coordinator_epoch,
            current_txn_start_offset=state.current_txn_start_offset,
        )
        for state in partition.describe_producers()
    ]
    return ctx.build(
        "PartitionResponse", partition_index=index, error_code=0, error_message=None, active_producers=producers
    )


@handles(ApiKey.DESCRIBE_PRODUCERS, versions=range(0, 1))
async def describe_producers(ctx: RequestContext, req: Any) -> Any:
    topics = [
        ctx.build(
            "TopicResponse",
            name=topic.name,
            partitions=[_partition(ctx, topic.name, index) for index in topic.partition_indexes],
        )
        for topic in req.topics
    ]
    return ctx.build("DescribeProducersResponse", throttle_time=0, topics=topics)
