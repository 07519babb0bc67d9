"""Kafka's ConsumerProtocol bytes: the JoinGroup metadata and SyncGroup assignment of protocol type "consumer".

Real Kafka clients put a Subscription in each JoinGroup protocol's metadata and the leader puts an Assignment per
member in its SyncGroup; the embedded consumer uses the same bytes, so DescribeGroups shows real data. Formats
(big-endian; string = int16 length + UTF-8, -1 = null; bytes = int32 length, -1 = null; array = int32 count):

    Subscription  v0: version int16, topics [string], user_data bytes?
                  v1: + owned_partitions [topic string, partitions [int32]]
                  v2: + generation_id int32 (-1 = none)
                  v3: + rack_id string?
    Assignment  v0-v3: version int16, assigned_partitions [topic string, partitions [int32]], user_data bytes?

Also StickyAssignor's user data (the previous assignment of the eager "sticky" protocol):
    v1: previous_assignment [topic string, partitions [int32]], generation int32;  v0: without generation.

Decoding follows Kafka's ConsumerProtocol: a version above the newest known is read as the newest (fields added later
are ignored, so trailing bytes are allowed there); for a known version every byte must be consumed. Bytes that are not
a valid encoding (truncated, negative lengths, bad UTF-8, negative version) raise `GroupError` with error code 23,
INCONSISTENT_GROUP_PROTOCOL: the member's metadata does not fit the "consumer" protocol it claims.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kafkalite.errors import GroupError

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3
INCONSISTENT_GROUP_PROTOCOL = 23

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


@dataclass(frozen=True, slots=True)
class StickyUserData:
    previous_assignment: tuple[TopicPartition, ...]
    generation: int = -1


# ---- encoding --------------------------------------------------------------------------------------------------------


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _bytes(value: bytes | None) -> bytes:
    if value is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(value)) + value


def _topic_partitions(partitions: Sequence[TopicPartition]) -> bytes:
    """Group by topic in first-seen order, as Kafka's ConsumerProtocol does."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = [struct.pack(">i", len(by_topic))]
    for topic, numbers in by_topic.items():
        out.append(_string(topic))
        out.append(struct.pack(f">i{len(numbers)}i", len(numbers), *numbers))
    return b"".join(out)


def encode_subscription(subscription: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    if not 0 <= version <= SUBSCRIPTION_VERSION:
        raise ValueError(f"subscription version {version} is not in 0..{SUBSCRIPTION_VERSION}")
    out = [struct.pack(">hi", version, len(subscription.topics))]
    out.extend(_string(topic) for topic in subscription.topics)
    out.append(_bytes(subscription.user_data))
    if version >= 1:
        out.append(_topic_partitions(subscription.owned_partitions))
    if version >= 2:
        out.append(struct.pack(">i", subscription.generation_id))
    if version >= 3:
        out.append(_string(subscription.rack_id))
    return b"".join(out)


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    if not 0 <= version <= ASSIGNMENT_VERSION:
        raise ValueError(f"assignment version {version} is not in 0..{ASSIGNMENT_VERSION}")
    return struct.pack(">h", version) + _topic_partitions(assignment.partitions) + _bytes(assignment.user_data)


def encode_sticky_user_data(data: StickyUserData) -> bytes:
    return _topic_partitions(data.previous_assignment) + struct.pack(">i", data.generation)


# ---- decoding --------------------------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def fail(self, reason: str) -> GroupError:
        return GroupError(f"malformed {self.what} at byte {self.pos}: {reason}", INCONSISTENT_GROUP_PROTOCOL)

    def unpack(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise self.fail(f"needs {size} bytes, {len(self.data) - self.pos} left")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def int16(self) -> int:
        return self.unpack(">h")[0]

    def int32(self) -> int:
        return self.unpack(">i")[0]

    def raw(self, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise self.fail(f"needs {size} bytes, {len(self.data) - self.pos} left")
        value = self.data[self.pos : self.pos + size]
        self.pos += size
        return bytes(value)

    def nullable_string(self) -> str | None:
        size = self.int16()
        if size == -1:
            return None
        if size < 0:
            raise self.fail(f"string length {size}")
        try:
            return self.raw(size).decode()
        except UnicodeDecodeError as exc:
            raise self.fail("string is not UTF-8") from exc

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise self.fail("null string")
        return value

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        if size == -1:
            return None
        if size < 0:
            raise self.fail(f"bytes length {size}")
        return self.raw(size)

    def count(self) -> int:
        size = self.int32()
        if size < 0 or size > len(self.data) - self.pos:
            raise self.fail(f"array length {size}")
        return size

    def topic_partitions(self) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for _ in range(self.count()):
            topic = self.string()
            numbers = self.count()
            out.extend((topic, p) for p in self.unpack(f">{numbers}i"))
        return tuple(out)

    def version(self, newest: int) -> tuple[int, bool]:
        """(version to read as, whether trailing bytes are allowed)."""
        version = self.int16()
        if version < 0:
            raise self.fail(f"version {version}")
        return min(version, newest), version > newest

    def finish(self, trailing_allowed: bool) -> None:
        if not trailing_allowed and self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} trailing bytes")


def decode_subscription(data: bytes) -> Subscription:
    reader = _Reader(data, "consumer subscription")
    version, trailing_allowed = reader.version(SUBSCRIPTION_VERSION)
    topics = tuple(reader.string() for _ in range(reader.count()))
    user_data = reader.nullable_bytes()
    owned = reader.topic_partitions() if version >= 1 else ()
    generation_id = reader.int32() if version >= 2 else -1
    rack_id = reader.nullable_string() if version >= 3 else None
    reader.finish(trailing_allowed)
    return Subscription(topics, user_data, owned, generation_id, rack_id)


def decode_assignment(data: bytes) -> Assignment:
    """Empty bytes (what the coordinator gives a member the leader left out) decode as no partitions."""
    if not data:
        return Assignment(())
    reader = _Reader(data, "consumer assignment")
    _, trailing_allowed = reader.version(ASSIGNMENT_VERSION)
    partitions = reader.topic_partitions()
    user_data = reader.nullable_bytes()
    reader.finish(trailing_allowed)
    return Assignment(partitions, user_data)


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """StickyAssignor user data, v1 (with generation) or v0 (without)."""
    reader = _Reader(data, "sticky assignor user data")
    previous = reader.topic_partitions()
    generation = reader.int32() if reader.pos < len(data) else -1
    reader.finish(trailing_allowed=False)
    return StickyUserData(previous, generation)
