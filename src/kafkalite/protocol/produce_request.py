"""Large Produce requests read with their records left in the frame: each `records` field is a `memoryview` slice of
the request's bytes instead of a copy.

kio's native reader copies every `records` field out of the frame into a `bytes` of its own. For a producer sending
requests of a megabyte that copy is one of the two memory-to-memory copies a produced byte takes inside the broker,
and a profile of the 1 KiB produce rows put each at about 7% of the broker's cycles. The log writes a view as it would
the copy (`os.pwritev`), the record-batch codec reads either, and the memory engine keeps a copy of its own, so
nothing downstream needs the records as `bytes`.

Only requests that carry large records fields are read here. Building kio's classes from Python costs about 3 µs a
request and 1 µs a partition, where kio's native reader spends 0.14 µs a partition plus the copy (1.1 µs at 16 KiB of
records, 7.3 µs at 256 KiB, 43 µs at 1 MiB; `python -m bench.produce_decode`, compiled, the frame in the CPU's
cache). So a body must be at least `RECORDS_VIEW_MIN_BYTES`, and hold at least `RECORDS_VIEW_MIN_BYTES_PER_PARTITION`
for each partition it names: a large request spread over many partitions (a producer writing to a thousand of
them) goes to kio, and so do the small requests of the end-to-end rows, where the broker's cost per request decides
the latency. The caller gives the partition budget; the reader stops as soon as the array counts exceed it.

Everything except the records is read with kio's own field readers, into kio's own classes of the request's
version, so a request read here equals the one kio reads but for `records` being a view
(tests/protocol/test_produce_request.py holds the two equal for every version). A request this reader does not take
on (tagged fields, which kio refuses unless it knows them, or a null array) gets `None`, and the caller falls back to
kio, whose answer is the reference. The caller has run `request_guard.check_body` first, so every length and count
lies within the frame.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from kio.serial.readers import (
    read_compact_string,
    read_compact_string_nullable,
    read_int16,
    read_int32,
    read_legacy_string,
    read_nullable_legacy_string,
    read_timedelta_i32,
    read_unsigned_varint,
    read_uuid,
)

RECORDS_VIEW_MIN_BYTES: Final = 256 * 1024
"""A Produce body at least this long may be read with its records left in the frame..."""
RECORDS_VIEW_MIN_BYTES_PER_PARTITION: Final = 64 * 1024
"""... when it holds at least this much for each partition it names."""

FIRST_TOPIC_ID_VERSION: Final = 13  # v13 names each topic by id (uuid) instead of by name


def read_with_record_views(
    frame: bytes | memoryview, offset: int, request_type: type[Any], max_partitions: int
) -> Any | None:
    """The Produce request of `request_type`'s version whose body starts at `offset` in `frame`, with each partition's
    `records` a `memoryview` of `frame` (None for null records); None when the body has tagged fields or a null
    array (kio reads those), or when it names more than `max_partitions` partitions (kio reads those faster: see
    `partition_budget`).

    kio's field readers take the buffer and a position and return the value with the number of bytes it took."""
    module = sys.modules[request_type.__module__]
    topic_type: type[Any] = module.TopicProduceData
    partition_type: type[Any] = module.PartitionProduceData
    flexible: bool = request_type.__flexible__
    by_id = int(request_type.__version__) >= FIRST_TOPIC_ID_VERSION
    view = memoryview(frame)
    pos = offset
    partitions_left = max_partitions
    read_nullable_string = read_compact_string_nullable if flexible else read_nullable_legacy_string
    read_string = read_compact_string if flexible else read_legacy_string
    transactional_id, used = read_nullable_string(frame, pos)
    pos += used
    acks, used = read_int16(frame, pos)
    pos += used
    timeout, used = read_timedelta_i32(frame, pos)
    pos += used
    topic_count, pos = _array_length(frame, pos, flexible)
    if topic_count < 0:
        return None
    topics: list[Any] = []
    for _ in range(topic_count):
        if by_id:
            topic_id, used = read_uuid(frame, pos)
        else:
            name, used = read_string(frame, pos)
        pos += used
        partition_count, pos = _array_length(frame, pos, flexible)
        partitions_left -= partition_count
        if partition_count < 0 or partitions_left < 0:
            return None
        partitions: list[Any] = []
        for _ in range(partition_count):
            index, used = read_int32(frame, pos)
            pos += used
            size: int
            if flexible:
                length, used = read_unsigned_varint(frame, pos)
                size = length - 1  # compact bytes: length + 1, 0 for null
            else:
                size, used = read_int32(frame, pos)
            pos += used
            records: memoryview | None = None
            if size >= 0:
                if pos + size > len(frame):  # the guard has checked this; a slice would silently come up short
                    raise ValueError(f"records of {size} bytes run past the end of the frame")
                records = view[pos : pos + size]
                pos += size
            if flexible:
                if not _no_tagged_fields(frame, pos):
                    return None
                pos += 1
            partitions.append(partition_type(index=index, records=records))
        if flexible:
            if not _no_tagged_fields(frame, pos):
                return None
            pos += 1
        if by_id:
            topics.append(topic_type(topic_id=topic_id, partition_data=tuple(partitions)))
        else:
            topics.append(topic_type(name=name, partition_data=tuple(partitions)))
    if flexible and not _no_tagged_fields(frame, pos):
        return None
    return request_type(transactional_id=transactional_id, acks=acks, timeout=timeout, topic_data=tuple(topics))


def partition_budget(body_bytes: int) -> int:
    """How many partitions a Produce body of `body_bytes` may name and still be read here; 0 (none) below
    `RECORDS_VIEW_MIN_BYTES`."""
    if body_bytes < RECORDS_VIEW_MIN_BYTES:
        return 0
    return body_bytes // RECORDS_VIEW_MIN_BYTES_PER_PARTITION


def _array_length(frame: bytes | memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    """An array's element count (-1: null) and the position after it."""
    if flexible:
        length, used = read_unsigned_varint(frame, pos)
        return length - 1, pos + used  # compact array: length + 1, 0 for null
    count, used = read_int32(frame, pos)
    return count, pos + used


def _no_tagged_fields(frame: bytes | memoryview, pos: int) -> bool:
    """Whether the tagged-field section at `pos` is empty (its count, one byte, is 0)."""
    return pos < len(frame) and frame[pos] == 0
