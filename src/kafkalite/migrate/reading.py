"""Reading offset ranges of several partitions of one topic: what copying and verifying both need.

`read_ranges` assigns each partition at its first offset and yields batches of records until every partition has
reached its range end, or the end of its log when the range has none. The end of the log is librdkafka's partition
EOF, raised when a fetch reaches the high watermark: it is the fetch path's own answer, used rather than a
ListOffsets figure because some Kafka-compatible brokers answer ListOffsets "latest" with a stale offset while
their fetches are right. It also covers a range ending in a transaction marker that no consumer ever sees.
Records at or past a range end are dropped and that partition paused, so a growing log cannot stretch the range.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kafkalite.admin import AdminError, ClientSettings
from kafkalite.admin.connection import kafka_message
from kafkalite.admin.consume import learn_leaders, take_batch

BATCH = 10_000


def reader(settings: ClientSettings, group: str, **overrides: Any) -> Consumer:
    """A read_committed consumer that never commits: the migration keeps its own progress."""
    config = settings.config(
        **{
            "group.id": group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "fetch.queue.backoff.ms": 10,  # see admin.consume: the default 1 s backoff idles the copy
            "fetch.wait.max.ms": 100,
            **overrides,
        }
    )
    try:
        return Consumer(config)
    except KafkaException as exc:
        raise AdminError(kafka_message(exc)) from None


def read_ranges(
    consumer: Consumer,
    topic: str,
    ranges: Mapping[int, tuple[int, int | None]],
    *,
    idle_s: float,
    ends: MutableMapping[int, int] | None = None,
) -> Iterator[list[Message]]:
    """Batches of the records in `ranges` (partition → [first, end), end None: to the log end), in order within each
    partition. `ends[p]` is set to the log end offset of each partition read to its log end. No record and no EOF
    for `idle_s` seconds raises AdminError."""
    open_ranges = {p: (first, end) for p, (first, end) in ranges.items() if end is None or first < end}
    if not open_ranges:
        return
    learn_leaders(consumer, topic, idle_s)
    consumer.assign([TopicPartition(topic, p, first) for p, (first, _) in open_ranges.items()])
    heard = time.monotonic()
    try:
        while open_ranges:
            batch: list[Message] = []
            messages = take_batch(consumer, BATCH, 0.5)
            if messages:
                heard = time.monotonic()
            elif time.monotonic() - heard > idle_s:
                left = ", ".join(f"{topic}[{p}]" for p in sorted(open_ranges))
                raise AdminError(f"no records and no end of log from {left} for {idle_s:g} s")
            for message in messages:
                partition = message.partition() or 0
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        if ends is not None and partition in open_ranges:
                            ends[partition] = message.offset() or 0
                        _close(consumer, topic, open_ranges, partition)
                        continue
                    raise AdminError(f"reading {topic}[{partition}]: {error.str()}")
                bounds = open_ranges.get(partition)
                offset = message.offset() or 0
                if bounds is None or (bounds[1] is not None and offset >= bounds[1]):
                    _close(consumer, topic, open_ranges, partition)
                    continue
                batch.append(message)
                if bounds[1] is not None and offset + 1 >= bounds[1]:
                    _close(consumer, topic, open_ranges, partition)
            if batch:
                yield batch
    finally:
        consumer.unassign()


def count_to_end(
    consumer: Consumer, topic: str, starts: Mapping[int, int], *, idle_s: float
) -> dict[int, tuple[int, int]]:
    """(records from `starts[p]` to the log end, the log end offset) per partition."""
    counts = dict.fromkeys(starts, 0)
    ends: dict[int, int] = {}
    for batch in read_ranges(consumer, topic, {p: (o, None) for p, o in starts.items()}, idle_s=idle_s, ends=ends):
        for message in batch:
            counts[message.partition() or 0] += 1
    return {p: (counts[p], ends[p]) for p in starts}


def _close(consumer: Consumer, topic: str, open_ranges: dict[int, tuple[int, int | None]], partition: int) -> None:
    if open_ranges.pop(partition, None) is not None:
        consumer.pause([TopicPartition(topic, partition)])
