"""The Produce answer in which every partition was accepted, written field by field instead of by kio.

kio's writers are pure Python: building and writing an answer of one topic and eight partitions cost 41 µs at v7
and 78 µs at v9, about a third of what the broker spent on such a request in process (`python -m
bench.dispatch_cost --partitions 8`), where an answer of one partition cost 2 µs. The Java client, aiokafka,
kafka-python and franz-go send one request per broker with every partition they have records for (librdkafka sends
one partition a request). This module writes any number of topics and partitions at the cost of a few `struct.pack`
calls per partition.

It covers the answer of a request whose every partition was appended (error code 0, no error message, no record
errors): the handler gives kio every other answer, which keeps them rare and counted by the error metrics. The layout
is the Produce response's, versions 3-13 (the ones served):

- v3-8: `responses` is an int32-counted array of (name: int16-length string, partitions: int32-counted array);
  from v9 (flexible) arrays are counted and strings measured by an unsigned varint of n + 1, and every structure
  ends with its tagged fields (none are written: `current_leader` and `node_endpoints`, v10+, are only for answers
  that name another leader);
- v13 names each topic by its 16-byte id instead of its name;
- a partition is index (int32), error code (int16), base offset (int64), log append time (int64, -1 unless the topic
  uses LogAppendTime), log start offset (int64, v5+), then record errors (an empty array) and error message (null),
  v8+;
- `throttle_time_ms` (int32) closes the body.

tests/protocol/test_produce_response.py holds it byte-equal to kio for every version and for any shape.
"""

from __future__ import annotations

import struct
from typing import Final

from kafkalite.protocol.wire import encode_count, encode_string

FIRST_FLEXIBLE_VERSION: Final = 9
FIRST_TOPIC_ID_VERSION: Final = 13
FIRST_LOG_START_VERSION: Final = 5
FIRST_RECORD_ERRORS_VERSION: Final = 8

Accepted = tuple[int, int, int, int]
"""A partition the request appended to: (index, base offset, log append time or -1, log start offset)."""

_PARTITION = struct.Struct(">ihqq")  # index, error code, base offset, log append time
_PARTITION_WITH_START = struct.Struct(">ihqqq")  # ... and log start offset (v5+)
_NO_ERRORS_LEGACY: Final = b"\x00\x00\x00\x00\xff\xff"  # v8: record errors: int32 0; error message: int16 -1 (null)
_NO_ERRORS_FLEXIBLE: Final = b"\x01\x00\x00"  # v9+: record errors: varint 0 + 1; message: varint 0 (null); no tags
_NO_THROTTLE_LEGACY: Final = b"\x00\x00\x00\x00"
_NO_THROTTLE_FLEXIBLE: Final = b"\x00\x00\x00\x00\x00"  # ... and the body's (empty) tagged fields


def encode_accepted(version: int, topics: list[tuple[str | bytes, list[Accepted]]]) -> bytes:
    """The Produce response body at `version` for `topics`: each as (its name, or its 16-byte id from v13, the
    partitions appended to, in request order)."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    with_start = version >= FIRST_LOG_START_VERSION
    if flexible:
        tail = _NO_ERRORS_FLEXIBLE
    elif version >= FIRST_RECORD_ERRORS_VERSION:
        tail = _NO_ERRORS_LEGACY
    else:
        tail = b""
    parts = [encode_count(len(topics), flexible)]
    for topic, partitions in topics:
        parts.append(_topic_key(topic, version, flexible))
        parts.append(encode_count(len(partitions), flexible))
        for index, base_offset, append_time, start_offset in partitions:
            if with_start:
                parts.append(_PARTITION_WITH_START.pack(index, 0, base_offset, append_time, start_offset))
            else:
                parts.append(_PARTITION.pack(index, 0, base_offset, append_time))
            if tail:
                parts.append(tail)
        if flexible:
            parts.append(b"\x00")  # the topic's tagged fields
    parts.append(_NO_THROTTLE_FLEXIBLE if flexible else _NO_THROTTLE_LEGACY)
    return b"".join(parts)


def _topic_key(topic: str | bytes, version: int, flexible: bool) -> bytes:
    """The topic's name as the version writes strings, or its id (v13+)."""
    if version >= FIRST_TOPIC_ID_VERSION:
        if not isinstance(topic, bytes) or len(topic) != 16:
            raise ValueError(f"Produce v{version} names a topic by its 16-byte id, not {topic!r}")
        return topic
    if not isinstance(topic, str):
        raise ValueError(f"Produce v{version} names a topic by its name, not {topic!r}")
    return encode_string(topic, flexible)
