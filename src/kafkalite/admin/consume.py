"""Records out: a stream of message batches from chosen partitions of one topic, through librdkafka's consumer.

Where reading starts (`StartPosition`): the log start, the log end, an absolute offset (a negative one counts back
from the end, as kcat's `-o -N`), the first record at or after a time, or, with a group, the group's committed
offsets (the log start where it committed none, as `auto.offset.reset=earliest`).

Without a group the partitions are assigned directly. With a group and no explicit partitions the consumer joins
the group (subscribe) and reads what the group assigns it; with explicit partitions it reads those and commits to the
group without joining. Offsets are committed only for records the caller has been handed and reported written
(`RecordStream.done`), never for records fetched ahead.

The stream ends once every assigned partition has been read to its end (librdkafka's partition EOF; a partition
that reached its end once counts as done, as with kcat's `-e`), or after `limit` records; with `follow` it waits for
new records until `close`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException, Message, TopicPartition

from kafkalite.admin.connection import AdminError, ClientSettings, Cluster, kafka_message
from kafkalite.admin.offsets import offsets_for_time, watermarks
from kafkalite.admin.topics import topic_metadata

BATCH = 10_000  # messages per consume() call: librdkafka hands them over in one C call


@dataclass(frozen=True)
class StartPosition:
    kind: str  # "beginning" | "end" | "offset" | "time" | "committed"
    value: int = 0  # the offset for "offset", ms since the epoch for "time"


def learn_leaders(consumer: Consumer, topic: str, timeout_s: float) -> None:
    """Fetch the topic's metadata into a new consumer before assigning it partitions.

    A consumer assigned a partition at a logical offset (beginning, end, committed) before it knows the partition's
    leader waits out a 500 ms offset-query timer first; with the leader known it starts at once. Consumers do not
    create topics on a Metadata request (`allow.auto.create.topics` is off), so this cannot create one.
    """
    try:
        consumer.list_topics(topic, timeout=timeout_s)
    except KafkaException as exc:
        raise AdminError(f"metadata for {topic}: {kafka_message(exc)}") from None


def take_batch(consumer: Consumer, limit: int, wait_s: float) -> list[Message]:
    """Up to `limit` messages: waits up to `wait_s` for the first, then takes what is already fetched without waiting.

    `Consumer.consume(n, timeout)` waits for all n or the timeout, so a partly filled batch would cost the whole
    timeout: at the end of a log that is every call.
    """
    first = consumer.poll(wait_s)
    if first is None:
        return []
    if limit <= 1:
        return [first]
    return [first, *consumer.consume(limit - 1, 0)]


def header_pairs(m: Message) -> list[tuple[str, bytes | None]]:
    """The record's headers in order; librdkafka hands them over as a list of (name, bytes or None)."""
    headers: Any = m.headers() or []
    return [(str(name), value.encode() if isinstance(value, str) else value) for name, value in headers]


class RecordStream:
    def __init__(
        self,
        cluster: Cluster,
        topic: str,
        *,
        start: StartPosition,
        partitions: Sequence[int] | None = None,
        group: str | None = None,
        isolation_level: str = "read_uncommitted",
        follow: bool = False,
        limit: int | None = None,
    ) -> None:
        self.topic = topic
        self.follow = follow
        self.limit = limit
        self.group = group
        self.delivered = 0
        metadata = topic_metadata(cluster, topic)
        available = sorted(metadata.partitions)
        for p in partitions or ():
            if p not in metadata.partitions:
                raise AdminError(f"topic {topic!r} has no partition {p} (it has {len(available)})")
        self._assigned: set[int] = set()
        self._at_end: set[int] = set()
        settings: ClientSettings = cluster.settings
        config: dict[str, Any] = {
            "group.id": group or "kafkalite-cli",  # librdkafka wants one even when nothing is committed
            "enable.auto.commit": group is not None,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "latest" if start.kind == "end" else "earliest",
            "isolation.level": isolation_level,
            # librdkafka postpones the next fetch by this long once its queue is full (default 1 s): far longer
            # than Python needs to drain the queue, so the consumer would sit idle
            "fetch.queue.backoff.ms": 10,
            "fetch.wait.max.ms": 100,
            "error_cb": self._error,
        }
        try:
            self._consumer = Consumer(settings.config(**config))
        except KafkaException as exc:
            raise AdminError(kafka_message(exc)) from None
        self._failure: str | None = None
        learn_leaders(self._consumer, topic, settings.timeout_s)
        if group is not None and partitions is None:
            self._offsets = self._resolve(cluster, available, start) if start.kind != "committed" else None
            self._consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        else:
            chosen = list(partitions) if partitions is not None else available
            offsets = self._resolve(cluster, chosen, start) if start.kind != "committed" else None
            if offsets is None:
                offsets = self._committed_or_start(chosen)
            self._assigned = set(chosen)
            self._consumer.assign([TopicPartition(topic, p, offsets[p]) for p in chosen])

    def _error(self, error: KafkaError) -> None:
        if error.fatal() or error.code() == KafkaError._ALL_BROKERS_DOWN:
            self._failure = str(error.str())

    def _resolve(self, cluster: Cluster, partitions: Sequence[int], start: StartPosition) -> dict[int, int]:
        keys = [(self.topic, p) for p in partitions]
        if start.kind == "beginning":
            return dict.fromkeys(partitions, OFFSET_BEGINNING)
        if start.kind == "end":
            return dict.fromkeys(partitions, OFFSET_END)
        if start.kind == "time":
            return {p: offset for (_, p), offset in offsets_for_time(cluster, keys, start.value).items()}
        if start.kind == "offset":
            marks = watermarks(cluster, keys)
            resolved = {}
            for (_, p), mark in marks.items():
                offset = mark.end + start.value if start.value < 0 else start.value
                if start.value >= 0 and not mark.start <= offset <= mark.end:
                    raise AdminError(
                        f"offset {start.value} is out of range for {self.topic}[{p}]: it holds [{mark.start}, "
                        f"{mark.end})"
                    )
                resolved[p] = max(offset, mark.start)
            return resolved
        raise AdminError(f"unknown start position {start.kind!r}")

    def _committed_or_start(self, partitions: Sequence[int]) -> dict[int, int]:
        try:
            committed = self._consumer.committed([TopicPartition(self.topic, p) for p in partitions], timeout=10)
        except KafkaException as exc:
            raise AdminError(f"committed offsets of group {self.group!r}: {kafka_message(exc)}") from None
        return {tp.partition: tp.offset if tp.offset >= 0 else OFFSET_BEGINNING for tp in committed}

    def _on_assign(self, consumer: Consumer, assigned: list[TopicPartition]) -> None:
        if self._offsets is not None:
            for tp in assigned:
                tp.offset = self._offsets.get(tp.partition, OFFSET_END)
        self._assigned = {tp.partition for tp in assigned}
        self._at_end -= self._assigned
        consumer.assign(assigned)

    def _on_revoke(self, consumer: Consumer, revoked: list[TopicPartition]) -> None:
        self._assigned -= {tp.partition for tp in revoked}
        self._at_end -= {tp.partition for tp in revoked}

    def batches(self, wait_s: float = 0.5, stop: threading.Event | None = None) -> Iterator[list[Message]]:
        """Batches of records in partition order, each at most `BATCH` long, until the end (see the module doc), or
        until `stop` is set: it is checked between polls, so it ends the stream within `wait_s`."""
        while stop is None or not stop.is_set():
            if self._failure is not None:
                raise AdminError(f"consuming {self.topic}: {self._failure}")
            wanted = BATCH if self.limit is None else min(BATCH, self.limit - self.delivered)
            if wanted <= 0:
                return
            messages = take_batch(self._consumer, wanted, wait_s)
            records = [message for message in messages if message.error() is None]
            if len(records) != len(messages):
                for message in messages:
                    error = message.error()
                    if error is None:
                        continue
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise AdminError(f"consuming {self.topic}[{message.partition()}]: {error.str()}")
                    self._at_end.add(message.partition() or 0)
            if records:
                self.delivered += len(records)
                yield records
            if not self.follow and self._assigned and self._at_end >= self._assigned:
                return

    def done(self, records: Sequence[Message]) -> None:
        """The caller has written `records`: with a group, their offsets may now be committed."""
        if self.group is not None and records:
            last: dict[int, int] = {}
            for message in records:
                last[message.partition() or 0] = message.offset() or 0
            self._consumer.store_offsets(offsets=[TopicPartition(self.topic, p, o + 1) for p, o in last.items()])

    def close(self) -> None:
        """Leave the group (committing what `done` stored) and close the connections."""
        self._consumer.close()
