"""WriteTxnMarkers (API key 27), versions 1-2.

v1 is the baseline (flexible; Kafka 4.0 removed v0) · v2 adds each marker's transaction_version (KIP-1228): a
transaction version 2 marker must carry an epoch above the producer's last one in the partition.

Kafka's coordinators send it to partition leaders; admin tools send it to abort a hanging transaction
(`kafka-transactions.sh abort`, kafka-python's `abort_transaction`), naming the producer id, epoch and coordinator
epoch that DescribeProducers reported. Each marker is written to every partition it names, as the coordinator's own
markers are (`Partition.write_marker`): a commit or abort control batch; an abort is indexed in `.txnindex`; a marker
on `__consumer_offsets` commits or drops the producer's transactional offsets. Per partition: an unknown topic or
partition answers UNKNOWN_TOPIC_OR_PARTITION (3), an epoch older than the producer's (or, for version 2 markers, not
above it) INVALID_PRODUCER_EPOCH (47), a coordinator epoch older than the producer's last marker's
TRANSACTION_COORDINATOR_FENCED (52). The answer waits until the written markers are durable (with fsync on).
Needs CLUSTER_ACTION on the cluster (`security/operations.py`).
"""

from __future__ import annotations

from typing import Any

from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import error_code


@handles(ApiKey.WRITE_TXN_MARKERS, versions=range(1, 3))
async def write_txn_markers(ctx: RequestContext, req: Any) -> Any:
    results = []
    for marker in req.markers:
        strict = getattr(marker, "transaction_version", 0) >= 2
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                try:
                    await ctx.broker.write_marker(
                        topic.name,
                        index,
                        marker.producer_id,
                        marker.producer_epoch,
                        commit=bool(marker.transaction_result),
                        coordinator_epoch=marker.coordinator_epoch,
                        strict_epoch=strict,
                    )
                    code = 0
                except KafkaLiteError as e:
                    code = error_code(e)
                partitions.append(ctx.build("WritableTxnMarkerPartitionResult", partition_index=index, error_code=code))
            topics.append(ctx.build("WritableTxnMarkerTopicResult", name=topic.name, partitions=partitions))
        results.append(ctx.build("WritableTxnMarkerResult", producer_id=marker.producer_id, topics=topics))
    return ctx.build("WriteTxnMarkersResponse", markers=results)
