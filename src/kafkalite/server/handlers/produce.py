"""Produce (API key 0), versions 3-13.

v3 is the first with RecordBatch v2 and transactional_id · v5 adds log_start_offset · v8 adds record_errors (filled
for keyless records refused by a compacted topic, as Kafka does) and error_message · v9 is the first flexible
version · v10 adds the current-leader hints (tagged) · v11 is v10 again (KIP-890 marker) · v12 is v11 again on the
wire, but a transactional batch adds its partition to the transaction (KIP-890 part 2, transaction version 2: the
client sends no AddPartitionsToTxn) · v13 names topics by id instead of by name.
Versions 0-2 (legacy message sets) are not served: librdkafka needs v3+ before it uses RecordBatch v2 at all.

Records stay opaque bytes from the request to the partition's log (a large request's records are views of its frame,
`protocol.produce_request`). acks=0 gets no response; an acks=0 produce that
fails closes the connection, Kafka's only way to tell such a producer. Unknown topics are auto-created when the
broker allows it. `timeout_ms` is ignored: with one replica nothing waits for followers.

Transactional batches (KIP-98) need the request's transactional_id, a partition added to that id's ongoing
transaction (else INVALID_TXN_STATE, 48: the KIP-890 part 1 check a partition leader makes; from v12 the partition is
added here first), the current producer
epoch (else INVALID_PRODUCER_EPOCH, 47, which the client reports as fenced) and the next sequence (else
OUT_OF_ORDER_SEQUENCE_NUMBER, 45). Each such refusal is logged with the client and the transactional id.

Appending and answering are two steps. The handler appends every partition, in request order, before it returns
(an append never waits for the disk, so this is quick). acks=1 is answered from there, and so is acks=-1 (all) when
the broker has nothing to wait for (fsync off, or the memory engine: `Broker.syncs_before_acks`). Otherwise the
handler returns `AfterDurable`: the answer is built only once every partition it appended to is synced (all of them join
the same fsync round, the broker's group commit), and a partition whose sync failed is answered with the storage
error instead. The connection loop uses that split to start on the next request while this one waits for the disk
(`server.server`'s "pipelined durability"): appends stay in request order, answers stay in request order, and no
acks=all answer leaves before its bytes are durable.

An answer in which every partition was appended (the common one) is written by `protocol.produce_response`, field
by field, instead of being built and written by kio per request (kio's writers are pure Python: 41-78 µs for eight
partitions); tests/protocol/test_produce_response.py holds it byte-equal to kio. Answers with an error go to kio.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from kafkalite.broker.partition import partition_of
from kafkalite.errors import KafkaLiteError, ProtocolError
from kafkalite.protocol.produce_response import FIRST_TOPIC_ID_VERSION, encode_accepted
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import AfterDurable, RequestContext, handles
from kafkalite.server.handlers._common import (
    UNKNOWN_TOPIC_ID,
    ZERO_UUID,
    error_code,
    error_message,
    topic_name_by_id,
)
from kafkalite.server.handlers._transactions import refused

if TYPE_CHECKING:
    from kafkalite.broker import Broker

INVALID_REQUIRED_ACKS = 21
FIRST_IMPLICIT_ADD = 12  # KIP-890 part 2: a transactional batch adds its partition to the transaction
CORRUPT_MESSAGE = 2

# One partition's outcome before it becomes a kio class: (index, error code, message, base offset, log append time,
# log start offset, record errors). Kept plain so that an acks=-1 answer can still swap in a sync failure.
_RecordErrors = tuple[tuple[int, str], ...]
_Outcome = tuple[int, int, str | None, int, int, int, _RecordErrors]


def _failed(index: int, code: int, message: str | None, record_errors: _RecordErrors = ()) -> _Outcome:
    return index, code, message, -1, -1, -1, record_errors


async def _append_partition(
    ctx: RequestContext,
    topic: str,
    index: int,
    records: bytes | memoryview | None,
    acks: int,
    transactional_id: str | None,
) -> _Outcome:
    if acks not in (0, 1, -1):
        return _failed(index, INVALID_REQUIRED_ACKS, f"acks={acks} is not 0, 1 or -1")
    if records is None:
        return _failed(index, CORRUPT_MESSAGE, "null records")
    try:
        broker = ctx.broker
        known = partition_of(broker.topics, topic, index) if transactional_id is None and not broker.closed else None
        if known is not None:
            # What `Broker.append` does for a batch outside transactions to a partition it has, while it is open,
            # without its interpreted frame; anything else goes through it, and gets its error there.
            result = await known.append(records)
        else:
            result = await ctx.broker.append(
                topic, index, records, transactional_id=transactional_id, implicit_add=ctx.version >= FIRST_IMPLICIT_ADD
            )
    except Exception as e:
        code = error_code(e)
        if transactional_id is not None:
            refused(ctx, transactional_id, code, f"{topic}-{index}: {error_message(e)}")
        return _failed(index, code, error_message(e), getattr(e, "record_errors", ()))
    return index, 0, None, result.base_offset, result.log_append_time_ms, result.log_start_offset, ()


async def _append_topic(
    ctx: RequestContext, topic_data: Any, acks: int, transactional_id: str | None
) -> tuple[Any, str | None, list[_Outcome]]:
    """(the topic as requested, its name when known, one outcome per partition)."""
    if hasattr(topic_data, "topic_id"):  # v13+ names the topic by id only; an unknown id is never auto-created
        name = topic_name_by_id(ctx.broker, topic_data.topic_id)
        if name is None:
            message = f"no topic has id {topic_data.topic_id or ZERO_UUID}"
            return topic_data, None, [_failed(p.index, UNKNOWN_TOPIC_ID, message) for p in topic_data.partition_data]
    else:
        name = topic_data.name
        if name not in ctx.broker.topics:  # known topics (every request but a topic's first) skip the coroutine
            try:
                await ctx.broker.ensure_topic(name)
            except KafkaLiteError as e:
                return topic_data, None, [_failed(p.index, e.error_code, str(e)) for p in topic_data.partition_data]
    return (
        topic_data,
        name,
        [
            await _append_partition(ctx, name, p.index, p.records, acks, transactional_id)
            for p in topic_data.partition_data
        ],
    )


def _response(ctx: RequestContext, appended: list[tuple[Any, str | None, list[_Outcome]]]) -> Any:
    build = ctx.build
    has_record_errors = ctx.schema.has_field("PartitionProduceResponse", "record_errors")  # v8+
    return build(
        "ProduceResponse",
        responses=[
            build(
                "TopicProduceResponse",
                name=getattr(topic_data, "name", None),
                topic_id=getattr(topic_data, "topic_id", None),
                partition_responses=[
                    build(
                        "PartitionProduceResponse",
                        index=index,
                        error_code=code,
                        base_offset=base_offset,
                        log_append_time=append_time,
                        log_start_offset=start_offset,
                        record_errors=[
                            build("BatchIndexAndErrorMessage", batch_index=i, batch_index_error_message=why)
                            for i, why in (record_errors if has_record_errors else ())
                        ],
                        error_message=message,
                    )
                    for index, code, message, base_offset, append_time, start_offset, record_errors in outcomes
                ],
            )
            for topic_data, _, outcomes in appended
        ],
        throttle_time=0,
    )


def _answer(ctx: RequestContext, appended: list[tuple[Any, str | None, list[_Outcome]]]) -> Any:
    """The encoded body when every partition was appended (`protocol.produce_response`), else the kio response.

    A topic the broker could not resolve (`name` None: refused, or a v13 id that names no topic, the null id
    included) goes to kio even when it listed no partitions, so no error is missed and kio echoes the request's
    own topic field."""
    if any(name is None or any(o[1] for o in outcomes) for _, name, outcomes in appended):
        return _response(ctx, appended)
    version = ctx.schema.version
    by_id = version >= FIRST_TOPIC_ID_VERSION
    return encode_accepted(
        version,
        [
            (
                topic_data.topic_id.int.to_bytes(16, "big") if by_id else topic_data.name,  # `UUID.bytes` is Python
                [(o[0], o[3], o[4], o[5]) for o in outcomes],
            )
            for topic_data, _, outcomes in appended
        ],
    )


def _made_durable(broker: Broker, topic: str, index: int) -> Awaitable[None]:
    """What `Broker.make_durable` does (the caller checked `syncs_before_acks`) for a partition the broker has,
    without its interpreted frame and lookups; anything else goes through it, and gets its error there."""
    known = partition_of(broker.topics, topic, index)
    return broker.make_durable(topic, index) if known is None else known.log.sync()


async def _answer_when_durable(ctx: RequestContext, appended: list[tuple[Any, str | None, list[_Outcome]]]) -> Any:
    """Wait for every appended partition's sync (one round for all), then answer; a failed sync becomes its error."""
    synced = [(name, o[0]) for _, name, outcomes in appended if name is not None for o in outcomes if not o[1]]
    failed: dict[tuple[str, int], Exception] = {}
    if len(synced) == 1:  # the common case (librdkafka sends one partition a request): no task for gather to make
        try:
            await _made_durable(ctx.broker, *synced[0])
        except Exception as e:
            failed[synced[0]] = e
    elif synced:
        results = await asyncio.gather(*(_made_durable(ctx.broker, *key) for key in synced), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result  # a wait cancelled (the loop ending) is not a sync: answer nothing, as one partition does
        failed = {key: e for key, e in zip(synced, results, strict=True) if isinstance(e, Exception)}
    if failed:
        appended = [(topic_data, name, _sync_failed(name, outcomes, failed)) for topic_data, name, outcomes in appended]
    return _answer(ctx, appended)


def _sync_failed(
    name: str | None, outcomes: list[_Outcome], failed: dict[tuple[str, int], Exception]
) -> list[_Outcome]:
    if name is None:
        return outcomes
    errors = [failed.get((name, o[0])) if not o[1] else None for o in outcomes]
    return [
        o if e is None else _failed(o[0], error_code(e), error_message(e))
        for o, e in zip(outcomes, errors, strict=True)
    ]


@handles(ApiKey.PRODUCE, versions=range(3, 14))
async def produce(ctx: RequestContext, req: Any) -> Any:
    acks = req.acks
    appended = [await _append_topic(ctx, topic_data, acks, req.transactional_id) for topic_data in req.topic_data]
    if acks == 0:
        failed = [o for _, _, outcomes in appended for o in outcomes if o[1]]
        if failed:  # as Kafka does: closing the connection is the only way to tell an acks=0 producer
            raise ProtocolError(f"acks=0 produce failed (error {failed[0][1]}); closing to signal it")
        return None
    if acks == -1 and ctx.broker.syncs_before_acks:
        return AfterDurable(_answer_when_durable(ctx, appended))
    return _answer(ctx, appended)  # acks=1, or acks=-1 with nothing to wait for (fsync off, or the memory engine)
