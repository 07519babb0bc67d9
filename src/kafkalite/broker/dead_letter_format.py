"""What a dead letter is as a record, and where a replay sends it. Pure: shared by the embedded queue
(`broker.dead_letter`) and the network client (`client.network`), so both write and read the same bytes.

Dead-letter topic: `<topic>.DLQ`, same partition number as the original. A dead letter keeps the original key,
value and headers and adds Spring Kafka's headers (binary encodings as Spring Kafka writes them, so existing tools
understand them)::

    kafka_dlt-original-topic           UTF-8
    kafka_dlt-original-partition       int32, big-endian
    kafka_dlt-original-offset          int64, big-endian (-1 when the record never got an offset: producer path)
    kafka_dlt-original-timestamp       int64, big-endian
    kafka_dlt-original-timestamp-type  UTF-8 ("CreateTime" or "LogAppendTime")
    kafka_dlt-original-consumer-group  UTF-8 (consumer path only)
    kafka_dlt-exception-fqcn           UTF-8, module-qualified class name of the exception
    kafka_dlt-exception-message        UTF-8
    kafka_dlt-exception-stacktrace     UTF-8

Replay delivers a letter again to whoever failed it, and to nobody else. Kafka delivers a record to every group
reading its topic, so a letter written back to the original topic would reach every group a second time. Instead:

- a letter with a consumer group `G` goes to that group's retry topic `<topic>.<G>.retry` (same partition number,
  created with the original topic's partition count). Consumers of group `G` subscribe to it beside `<topic>` once
  it exists, from its earliest offset; no other group reads it. A letter that fails again there is dead-lettered
  to `<topic>.DLQ` as a letter of `<topic>` (its original offset is then its offset in the retry topic).
- a letter without a group (a producer gave up on a full partition: nobody ever received it) goes back to the
  original topic and partition, where every group receives it for the first time.

Replay progress is kept as committed offsets on the dead-letter topic, per DLQ partition, so a letter is replayed
once, across restarts and in every deployment: group `__kafkalite-dlq-replay` holds the offset below which every
letter was replayed (a full replay advances it); `__kafkalite-dlq-replay.<G>` the offset below which every letter of
group `G` was (a `replay --group G` advances it). A letter is pending while its offset is at or above both.
"""

from __future__ import annotations

import re
import struct
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafkalite.errors import InvalidTopicError

DLQ_SUFFIX = ".DLQ"
RETRY_SUFFIX = ".retry"
REPLAY_GROUP = "__kafkalite-dlq-replay"
HEADER_PREFIX = "kafka_dlt-"
MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")

Headers = tuple[tuple[str, bytes | None], ...]


def dead_letter_topic(topic: str) -> str:
    return topic + DLQ_SUFFIX


def retry_topic(topic: str, group: str) -> str:
    """The topic a replay of `group`'s letters of `topic` goes to; `InvalidTopicError` when `group` cannot be part of
    a topic name."""
    name = f"{topic}.{group}{RETRY_SUFFIX}"
    if not _LEGAL_TOPIC.fullmatch(group) or len(name) > MAX_TOPIC_NAME:
        raise InvalidTopicError(
            f"group {group!r} cannot name a retry topic for {topic!r} (replay needs a group id of a-z, A-Z, 0-9, '.',"
            f" '_' and '-', at most {MAX_TOPIC_NAME} characters with the topic)"
        )
    return name


def retry_topic_or_none(topic: str, group: str | None) -> str | None:
    """`retry_topic`, or None when there is no group or the group's name cannot make one (nothing to subscribe)."""
    if group is None:
        return None
    try:
        return retry_topic(topic, group)
    except InvalidTopicError:
        return None


def replay_group(consumer_group: str | None) -> str:
    """The group whose committed offsets on `<topic>.DLQ` are the replay progress of `consumer_group`'s letters."""
    return REPLAY_GROUP if consumer_group is None else f"{REPLAY_GROUP}.{consumer_group}"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One record of a dead-letter topic, with its Spring-Kafka headers decoded."""

    dlq_partition: int
    dlq_offset: int
    original_topic: str
    original_partition: int
    original_offset: int
    original_timestamp: int
    exception_class: str
    exception_message: str
    consumer_group: str | None
    key: bytes | None
    value: bytes | None
    headers: Headers  # the original record's own headers
    timestamp: int = -1  # when it was dead-lettered (the dead-letter record's timestamp)


@dataclass(frozen=True, slots=True)
class Replay:
    """A dead letter and where a replay writes it."""

    letter: DeadLetter
    topic: str
    partition: int


def dead_letter_headers(
    topic: str, partition: int, offset: int, timestamp: int, error: BaseException, group_id: str | None
) -> list[tuple[str, bytes | None]]:
    """The `kafka_dlt-` headers of one dead letter."""
    error_class = type(error)
    headers: list[tuple[str, bytes | None]] = [
        (HEADER_PREFIX + "original-topic", topic.encode()),
        (HEADER_PREFIX + "original-partition", struct.pack(">i", partition)),
        (HEADER_PREFIX + "original-offset", struct.pack(">q", offset)),
        (HEADER_PREFIX + "original-timestamp", struct.pack(">q", timestamp)),
        (HEADER_PREFIX + "original-timestamp-type", b"CreateTime"),
        (HEADER_PREFIX + "exception-fqcn", f"{error_class.__module__}.{error_class.__qualname__}".encode()),
        (HEADER_PREFIX + "exception-message", str(error).encode()),
        (HEADER_PREFIX + "exception-stacktrace", "".join(traceback.format_exception(error)).encode()),
    ]
    if group_id is not None:
        headers.append((HEADER_PREFIX + "original-consumer-group", group_id.encode()))
    return headers


def decode_dead_letter(
    dlq_partition: int,
    dlq_offset: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    timestamp: int = -1,
) -> DeadLetter:
    """A dead-letter record read back; headers that are missing or of the wrong size decode as -1 or ""."""
    dlt = {name[len(HEADER_PREFIX) :]: value or b"" for name, value in headers if name.startswith(HEADER_PREFIX)}
    own = tuple((name, value) for name, value in headers if not name.startswith(HEADER_PREFIX))

    def integer(name: str, fmt: str) -> int:
        raw = dlt.get(name, b"")
        return int(struct.unpack(fmt, raw)[0]) if len(raw) == struct.calcsize(fmt) else -1

    group = dlt.get("original-consumer-group")
    return DeadLetter(
        dlq_partition=dlq_partition,
        dlq_offset=dlq_offset,
        original_topic=dlt.get("original-topic", b"").decode(errors="replace"),
        original_partition=integer("original-partition", ">i"),
        original_offset=integer("original-offset", ">q"),
        original_timestamp=integer("original-timestamp", ">q"),
        exception_class=dlt.get("exception-fqcn", b"").decode(errors="replace"),
        exception_message=dlt.get("exception-message", b"").decode(errors="replace"),
        consumer_group=group.decode(errors="replace") if group is not None else None,
        key=key,
        value=value,
        headers=own,
        timestamp=timestamp,
    )


def is_pending(letter: DeadLetter, progress: Mapping[str, int]) -> bool:
    """Not replayed yet. `progress` maps a replay group (`replay_group(...)`) to its committed offset on the letter's
    DLQ partition; a group without one is absent."""
    done = max(progress.get(REPLAY_GROUP, 0), progress.get(replay_group(letter.consumer_group), 0))
    return letter.dlq_offset >= done


def replay_target(topic: str, letter: DeadLetter, partition_count: int) -> Replay:
    """Where `letter` of `topic` goes: its group's retry topic, else the original topic. The partition is the
    original one, or the DLQ partition's number when the original topic has fewer partitions now."""
    target = letter.original_partition
    if not 0 <= target < partition_count:
        target = letter.dlq_partition
    if letter.consumer_group is None:
        return Replay(letter, topic, target)
    return Replay(letter, retry_topic(topic, letter.consumer_group), target)


def selected(letter: DeadLetter, group: str | None) -> bool:
    """Whether a replay limited to `group` (None: every letter) takes `letter`."""
    return group is None or letter.consumer_group == group


def progress_after(letter: DeadLetter, group: str | None) -> tuple[str, int]:
    """The (replay group, offset) to commit on the letter's DLQ partition once it is replayed by a replay limited
    to `group`: a full replay advances the common progress, a replay of one group that group's own."""
    return (REPLAY_GROUP if group is None else replay_group(group)), letter.dlq_offset + 1
