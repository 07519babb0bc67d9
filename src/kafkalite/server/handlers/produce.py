"""Produce (API key 0), versions 3-13.

v3 is the first with RecordBatch v2 and transactional_id · v5 adds log_start_offset · v8 adds record_errors and
error_message · v9 is the first flexible version · v10 adds the current-leader hints (tagged) · v11 is v10 again
(KIP-890 marker) · v12 is v11 again · v13 names topics by id instead of by name.
Versions 0-2 (legacy message sets) are not served: librdkafka needs v3+ before it uses RecordBatch v2 at all.

Records stay opaque bytes from the request to the partition's log. acks=0 gets no response; acks=1 and acks=-1 (all)
are answered once the broker has appended (and, for -1, synced); an acks=0 produce that fails closes the
connection, Kafka's only way to tell such a producer. Partitions are appended concurrently, each in its
own lock, so one request's fsyncs share the broker's group commit. Unknown topics are auto-created when the broker
allows it; a transactional_id is accepted and ignored (KafkaLite has no transactions). `timeout_ms` is ignored: with
one replica nothing waits for followers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafkalite.errors import KafkaLiteError, ProtocolError, UnknownTopicError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_ID, error_code, error_message

INVALID_REQUIRED_ACKS = 21
CORRUPT_MESSAGE = 2


def _partition_response(ctx: RequestContext, index: int, code: int, message: str | None = None, **result: int) -> Any:
    return ctx.build(
        "PartitionProduceResponse",
        index=index,
        error_code=code,
        base_offset=result.get("base_offset", -1),
        log_append_time=result.get("log_append_time", -1),
        log_start_offset=result.get("log_start_offset", -1),
        record_errors=[],
        error_message=message,
    )


async def _produce_partition(ctx: RequestContext, topic: str, index: int, records: bytes | None, acks: int) -> Any:
    if acks not in (0, 1, -1):
        return _partition_response(ctx, index, INVALID_REQUIRED_ACKS, f"acks={acks} is not 0, 1 or -1")
    if records is None:
        return _partition_response(ctx, index, CORRUPT_MESSAGE, "null records")
    try:
        result = await ctx.broker.produce(topic, index, records, acks=acks)
    except Exception as e:
        return _partition_response(ctx, index, error_code(e), error_message(e))
    return _partition_response(
        ctx,
        index,
        0,
        base_offset=result.base_offset,
        log_append_time=result.log_append_time_ms,
        log_start_offset=result.log_start_offset,
    )


async def _produce_topic(ctx: RequestContext, topic_data: Any, acks: int) -> Any:
    topic_id = getattr(topic_data, "topic_id", None)
    try:
        name = ctx.broker.topic_by_id(topic_id).name if topic_id is not None else topic_data.name
        if topic_id is None:
            await ctx.broker.ensure_topic(name)
    except KafkaLiteError as e:
        code = UNKNOWN_TOPIC_ID if isinstance(e, UnknownTopicError) and topic_id is not None else e.error_code
        partitions = [_partition_response(ctx, p.index, code, str(e)) for p in topic_data.partition_data]
    else:
        partitions = await asyncio.gather(
            *(_produce_partition(ctx, name, p.index, p.records, acks) for p in topic_data.partition_data)
        )
    return ctx.build(
        "TopicProduceResponse",
        name=getattr(topic_data, "name", None),
        topic_id=topic_id,
        partition_responses=partitions,
    )


@handles(ApiKey.PRODUCE, versions=range(3, 14))
async def produce(ctx: RequestContext, req: Any) -> Any:
    responses = await asyncio.gather(*(_produce_topic(ctx, topic_data, req.acks) for topic_data in req.topic_data))
    if req.acks == 0:
        failed = [p for t in responses for p in t.partition_responses if p.error_code]
        if failed:  # as Kafka does: closing the connection is the only way to tell an acks=0 producer
            raise ProtocolError(f"acks=0 produce failed ({failed[0].error_code.name}); closing to signal it")
        return None
    return ctx.build("ProduceResponse", responses=responses, throttle_time=0)
