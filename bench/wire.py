"""Many concurrent connections, each doing one Metadata (v1) and one small Produce (v3, acks=1), over raw sockets.

A thousand librdkafka clients would measure librdkafka's start-up (threads per client) more than the broker, so the
connection storm speaks the wire protocol itself, with kio classes (as KafkaLite does). All connections are opened
at once and held open until every one has had both replies, so the broker serves all of them at the same time.
"""

from __future__ import annotations

import asyncio
import functools
import io
import struct
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from kafkalite.protocol.messages import build
from kafkalite.protocol.records import RecordToWrite, build_batch

METADATA, PRODUCE = 3, 0
METADATA_VERSION, PRODUCE_VERSION = 1, 3


@dataclass
class Storm:
    served: int = 0
    failed: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def _request_module(api_key: int, version: int) -> Any:
    return sys.modules[load_request_schema(api_key, version).__module__]


def encode_frame(api_key: int, version: int, correlation_id: int, body: Any, client_id: str = "bench") -> bytes:
    """The request frame (size prefix included) of kio request `body`."""
    request_type = load_request_schema(api_key, version)
    header_type = request_type.__header_schema__
    buffer = io.BytesIO()
    header = header_type(
        request_api_key=api_key, request_api_version=version, correlation_id=correlation_id, client_id=client_id
    )
    entity_writer(header_type)(buffer, header)
    entity_writer(request_type)(buffer, body)
    return struct.pack(">i", buffer.tell()) + buffer.getvalue()


async def _call(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, api_key: int, version: int, frame: bytes
) -> Any:
    writer.write(frame)
    await writer.drain()
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    reply = await reader.readexactly(size)
    response_type = load_response_schema(api_key, version)
    response, _ = entity_reader(response_type)(reply, 4 + response_type.__header_schema__.__version__)
    return response


def produce_frame(
    topic: str,
    batches: Mapping[int, bytes],
    version: int,
    correlation_id: int,
    *,
    acks: int = 1,
    timeout_ms: int = 30_000,
) -> bytes:
    """The frame (size prefix included) of a Produce request for one topic, by name (v3–v12): `batches` by
    partition."""
    module = _request_module(PRODUCE, version)
    data = tuple(build(module.PartitionProduceData, {"index": p, "records": b}) for p, b in batches.items())
    topic_data = build(module.TopicProduceData, {"name": topic, "partition_data": data})
    body = build(
        module.ProduceRequest,
        {"transactional_id": None, "acks": acks, "timeout": timeout_ms, "topic_data": (topic_data,)},
    )
    return encode_frame(PRODUCE, version, correlation_id, body)


def _requests(topic: str, partition: int) -> tuple[bytes, bytes]:
    metadata = _request_module(METADATA, METADATA_VERSION)
    metadata_body = build(
        metadata.MetadataRequest, {"topics": (build(metadata.MetadataRequestTopic, {"name": topic}),)}
    )
    records = bytes(build_batch([RecordToWrite(b"x" * 100)], now_ms=int(time.time() * 1000)))
    return (
        encode_frame(METADATA, METADATA_VERSION, 1, metadata_body),
        produce_frame(topic, {partition: records}, PRODUCE_VERSION, 2),
    )


async def _storm(host: str, port: int, topic: str, partitions: int, connections: int, timeout: float) -> Storm:
    result = Storm()
    everyone_answered = asyncio.Event()
    frames = [_requests(topic, p) for p in range(partitions)]

    def finished(error: str | None) -> None:
        if error is None:
            result.served += 1
        else:
            result.failed += 1
            result.errors.append(error)
        if result.served + result.failed == connections:
            everyone_answered.set()

    async def one(n: int) -> None:
        writer = None
        try:
            reader, writer = await asyncio.open_connection(host, port)
            metadata_frame, produce_frame = frames[n % partitions]
            metadata = await _call(reader, writer, METADATA, METADATA_VERSION, metadata_frame)
            produced = await _call(reader, writer, PRODUCE, PRODUCE_VERSION, produce_frame)
            codes = [int(t.error_code) for t in metadata.topics]
            codes += [int(p.error_code) for t in produced.responses for p in t.partition_responses]
            finished(None if not any(codes) else f"error codes {codes}")
        except (OSError, asyncio.IncompleteReadError) as exc:
            finished(f"{type(exc).__name__}: {exc}")
        await everyone_answered.wait()
        if writer is not None:
            writer.close()

    began = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(connections))), timeout)
    except TimeoutError:
        result.errors.append(f"{connections - result.served - result.failed} connections unanswered after {timeout} s")
        result.failed = connections - result.served
    result.seconds = time.perf_counter() - began
    return result


def storm(host: str, port: int, topic: str, partitions: int, connections: int, timeout: float) -> Storm:
    """Open `connections` connections at once; each sends Metadata then Produce; time until all are answered."""
    return asyncio.run(_storm(host, port, topic, partitions, connections, timeout))


FETCH, FETCH_VERSION = 1, 11
FETCH_MAX_BYTES = 50 * 1024 * 1024  # Kafka's fetch.max.bytes default
PARTITION_MAX_BYTES = 1024 * 1024  # Kafka's max.partition.fetch.bytes default
_BATCH_HEAD = struct.Struct(">qi")  # base offset, batch length
_RECORDS_COUNT_AT = 57
OFFSET_OUT_OF_RANGE = 1


@dataclass
class Fetched:
    records: int = 0
    record_bytes: int = 0  # stored batch bytes received
    first_at: float | None = None  # perf_counter when the first Fetch was sent
    last_at: float = 0.0
    error: str | None = None


def fetch_frame(topic: str, offsets: list[int], correlation_id: int) -> bytes:
    """A Fetch v11 of partitions 0..n-1 of `topic` from `offsets`, with Kafka's default byte limits."""
    module = _request_module(FETCH, FETCH_VERSION)
    partitions = tuple(
        build(
            module.FetchPartition,
            {
                "partition": p,
                "current_leader_epoch": -1,
                "fetch_offset": offset,
                "log_start_offset": -1,
                "partition_max_bytes": PARTITION_MAX_BYTES,
            },
        )
        for p, offset in enumerate(offsets)
    )
    body = build(
        module.FetchRequest,
        {"replica_id": -1, "max_wait": 500, "min_bytes": 1, "max_bytes": FETCH_MAX_BYTES, "isolation_level": 0,
         "session_id": 0, "session_epoch": -1,
         "topics": (build(module.FetchTopic, {"topic": topic, "partitions": partitions}),),
         "forgotten_topics_data": (), "rack_id": ""},
    )  # fmt: skip
    return encode_frame(FETCH, FETCH_VERSION, correlation_id, body)


@functools.cache
def _fetch_reader() -> tuple[Any, int]:
    response_type = load_response_schema(FETCH, FETCH_VERSION)
    return entity_reader(response_type), 4 + response_type.__header_schema__.__version__


def read_fetch_answer(incoming: io.BufferedReader) -> Any:
    """The next Fetch v11 answer from `incoming`, decoded by kio (records stay bytes)."""
    read, header_size = _fetch_reader()
    (size,) = struct.unpack(">i", incoming.read(4))
    response, _ = read(incoming.read(size), header_size)
    return response


def whole_batches(records: bytes) -> tuple[int, int, int]:
    """(records, bytes, next offset) of the whole batches at the start of a partition's answer, counted from their
    headers; next offset is -1 when there is none (a broker may end an answer with part of a batch)."""
    count, position, next_offset = 0, 0, -1
    while position + 12 <= len(records):
        base, length = _BATCH_HEAD.unpack_from(records, position)
        if position + 12 + length > len(records):
            break
        count += struct.unpack_from(">i", records, position + _RECORDS_COUNT_AT)[0]
        next_offset = base + struct.unpack_from(">i", records, position + 23)[0] + 1
        position += 12 + length
    return count, position, next_offset


def raw_fetch(host: str, port: int, topic: str, partitions: int, expected: int, timeout: float) -> Fetched:
    """Read every partition of `topic` from offset 0 until `expected` records came, as a consumer's fetcher does (one
    Fetch v11 in flight on one connection, Kafka's default byte limits), over a blocking socket with kio decoding only
    the answer's framing: records are counted from batch headers, never decoded. What it measures is the broker's
    fetch path, with a client whose cost per byte is a `recv` and one copy. Timed from the first request sent to the
    last records received."""
    import socket

    offsets = [0] * partitions
    result = Fetched()
    deadline = time.perf_counter() + timeout
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        incoming = sock.makefile("rb", buffering=1 << 20)
        correlation_id = 0
        result.first_at = time.perf_counter()
        ends: list[int | None] = [None] * partitions
        while result.records < expected and time.perf_counter() < deadline:
            if all(end is not None and offset >= end for offset, end in zip(offsets, ends, strict=True)):
                break  # every partition read to the high watermark it reported (a broker may keep fewer records)
            correlation_id += 1
            sock.sendall(fetch_frame(topic, offsets, correlation_id))
            response = read_fetch_answer(incoming)
            for partition in response.responses[0].partitions:
                if partition.error_code == OFFSET_OUT_OF_RANGE and partition.log_start_offset > 0:
                    offsets[partition.partition_index] = partition.log_start_offset  # retention went first (the mock)
                    continue
                if partition.error_code:
                    result.error = f"partition {partition.partition_index}: error {int(partition.error_code)}"
                    return result
                ends[partition.partition_index] = partition.high_watermark
                count, position, next_offset = whole_batches(partition.records or b"")
                if next_offset >= 0:
                    offsets[partition.partition_index] = next_offset
                if count:
                    result.last_at = time.perf_counter()
                    result.records += count
                    result.record_bytes += position
    return result
