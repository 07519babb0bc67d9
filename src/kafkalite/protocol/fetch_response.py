"""The Fetch answer written field by field instead of by kio, with each partition's records left as the caller gave
them.

A consumer that keeps up gets one Fetch answer for nearly every produced request: one topic, one partition, a batch
or two of records. Building that answer as kio's classes (eight fields converted to kio's typed integers, three frozen
dataclasses) and writing it with kio's writers, which are pure Python, cost about 291,000 instructions (154,000
building, 137,000 writing), twice what the broker spends on the Produce request that carried the records (`python -m
bench.request_instructions --consume`, and docs/benchmarks.md). This module writes the same bytes with a few
`struct.pack` calls per partition.

It writes every answer the broker gives (versions 4-18, the ones served), errors included:

- the body opens with `throttle_time_ms` (int32), then, from v7, the top-level error code (int16, always 0: the
  broker answers per partition) and the fetch session id (int32, always 0: no fetch sessions are made, so clients
  send full requests);
- `responses` is an int32-counted array of topics below v12; from v12 (flexible) arrays are counted and strings
  measured by an unsigned varint of n + 1, and every structure ends with its tagged fields (none are written: the
  diverging epoch, current leader, snapshot id and node endpoints are for answers about replicas and leaders, which
  one broker never gives);
- a topic is its name (int16-length string, or compact from v12), or its 16-byte id from v13, then its partitions;
- a partition is index (int32), error code (int16), high watermark, last stable offset and, from v5, log start
  offset (int64 each), the aborted transactions (a nullable array of (producer id, first offset), int64 each), from
  v11 the preferred read replica (int32, -1: read from this broker), then the records (a length, int32 below v12,
  an unsigned varint of length + 1 from v12, and the bytes).

A partition's records are either a buffer (`bytes`, `bytearray`, `memoryview`), copied into the answer, or any other
sized object (a range of a segment file, to be sent with `sendfile`): the answer is then returned in parts, the object
standing for its own bytes between the encoded pieces around it (`server.zero_copy`).

tests/protocol/test_fetch_response.py holds it byte-equal to kio for every version and for any shape.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence, Sized
from typing import Final

from kafkalite.protocol.wire import encode_count, encode_string, encode_unsigned_varint

FIRST_LOG_START_VERSION: Final = 5
FIRST_SESSION_VERSION: Final = 7  # the top-level error code and the fetch session id
FIRST_PREFERRED_REPLICA_VERSION: Final = 11
FIRST_FLEXIBLE_VERSION: Final = 12
FIRST_TOPIC_ID_VERSION: Final = 13

FetchedPartition = tuple[int, int, int, int, int, Sequence[tuple[int, int]] | None, bytes | Sized | None]
"""One partition of the answer: (index, error code, high watermark, last stable offset, log start offset, aborted
transactions as (producer id, first offset), or None for a null array, records, or None for null records: what
Kafka answers a partition with an error)."""

_INT32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqq")  # index, error code, high watermark, last stable offset
_PARTITION_WITH_START = struct.Struct(">ihqqq")  # ... and log start offset (v5+)
_ABORTED = struct.Struct(">qq")  # producer id, first offset
_NO_ERROR_NO_SESSION: Final = b"\x00\x00\x00\x00\x00\x00"  # v7+: error code 0 (int16), session id 0 (int32)
_NULL_LEGACY: Final = b"\xff\xff\xff\xff"  # a null array or records: int32 -1
_NULL_FLEXIBLE: Final = b"\x00"  # ... from v12: unsigned varint 0
_NO_PREFERRED_REPLICA: Final = b"\xff\xff\xff\xff"  # int32 -1
_NO_TAGGED_FIELDS: Final = b"\x00"
_NULL_ID: Final = bytes(16)


def encode_fetch_body(
    version: int, topics: Sequence[tuple[str | uuid.UUID | None, Sequence[FetchedPartition]]], throttle_ms: int = 0
) -> list[bytes | Sized]:
    """The Fetch response body at `version` for `topics`, each as (its name, or its id from v13, as the request gave
    it, its partitions in request order), in parts: `bytes`, and each partition's records that are not `bytes`, in
    the order they are sent. An answer whose records are all `bytes` (or any other buffer: copied in too) is one
    part."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    with_start = version >= FIRST_LOG_START_VERSION
    with_replica = version >= FIRST_PREFERRED_REPLICA_VERSION
    parts: list[bytes | Sized] = []
    pieces: list[bytes | bytearray | memoryview] = [_INT32.pack(throttle_ms)]  # encoded since the last part
    if version >= FIRST_SESSION_VERSION:
        pieces.append(_NO_ERROR_NO_SESSION)
    pieces.append(encode_count(len(topics), flexible))
    for topic, partitions in topics:
        pieces.append(_topic_key(topic, version, flexible))
        pieces.append(encode_count(len(partitions), flexible))
        for index, code, high_watermark, last_stable, log_start, aborted, records in partitions:
            if with_start:
                pieces.append(_PARTITION_WITH_START.pack(index, code, high_watermark, last_stable, log_start))
            else:
                pieces.append(_PARTITION.pack(index, code, high_watermark, last_stable))
            if aborted is None:
                pieces.append(_NULL_FLEXIBLE if flexible else _NULL_LEGACY)
            else:
                pieces.append(encode_count(len(aborted), flexible))
                for producer_id, first_offset in aborted:
                    pieces.append(_ABORTED.pack(producer_id, first_offset))
                    if flexible:
                        pieces.append(_NO_TAGGED_FIELDS)
            if with_replica:
                pieces.append(_NO_PREFERRED_REPLICA)
            if records is None:
                pieces.append(_NULL_FLEXIBLE if flexible else _NULL_LEGACY)
            elif isinstance(records, (bytes, bytearray, memoryview)):  # a tuple: `A | B` is built on every call
                size = len(records)
                pieces.append(encode_unsigned_varint(size + 1) if flexible else _INT32.pack(size))
                pieces.append(records)
            else:
                size = len(records)
                pieces.append(encode_unsigned_varint(size + 1) if flexible else _INT32.pack(size))
                parts.append(b"".join(pieces))
                parts.append(records)
                pieces = []
            if flexible:
                pieces.append(_NO_TAGGED_FIELDS)  # the partition's
        if flexible:
            pieces.append(_NO_TAGGED_FIELDS)  # the topic's
    if flexible:
        pieces.append(_NO_TAGGED_FIELDS)  # the body's
    parts.append(b"".join(pieces))
    return parts


def _topic_key(topic: str | uuid.UUID | None, version: int, flexible: bool) -> bytes:
    """The topic's name as the version writes strings, or its id (v13+; None, as kio reads the null id: zeros)."""
    if version >= FIRST_TOPIC_ID_VERSION:
        if topic is None:
            return _NULL_ID
        if not isinstance(topic, uuid.UUID):
            raise ValueError(f"Fetch v{version} names a topic by its id, not {topic!r}")
        return topic.int.to_bytes(16, "big")  # `UUID.bytes`, without its Python property call
    if not isinstance(topic, str):
        raise ValueError(f"Fetch v{version} names a topic by its name, not {topic!r}")
    return encode_string(topic, flexible)
