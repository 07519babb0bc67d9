"""Copying one topic's records: same partition, key, value, headers and timestamp, in order, exactly once.

One consumer reads the source partitions from where the checkpoint left them to the end offsets taken when the copy
starts; one idempotent producer (`enable.idempotence`: acks=all, in-order retries without duplicates) writes each
record to the same partition on the target. Delivery reports arrive in send order per partition, so a FIFO of the
source offsets in flight pairs each report with its source record; each acknowledged pair goes into the partition's
`OffsetMap`. The checkpoint is saved from those maps every `SAVE_EVERY_S` seconds and when the topic is done, and
also when the copy is interrupted (after waiting for the records in flight).

Resuming: records the target acknowledged after the last save are counted from the target's end offset and the
same number of source records is skipped (mapped, not sent again). A target partition holding fewer records than
the checkpoint says, or records the migration did not write, stops the copy with an error: it has been changed.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, Producer

from kafkalite.admin import AdminError, Cluster
from kafkalite.admin.connection import kafka_message
from kafkalite.admin.offsets import watermarks
from kafkalite.migrate.checkpoint import Checkpoint, partition_key
from kafkalite.migrate.offset_map import OffsetMap
from kafkalite.migrate.reading import count_to_end, read_ranges, reader

SAVE_EVERY_S = 1.0
TIMESTAMP_NOT_AVAILABLE = 0


@dataclass
class TopicProgress:
    """What `on_progress` is told after every batch: the topic's totals so far."""

    topic: str
    total: int  # records to copy in this run (offset span; gaps make the copy finish early)
    copied: int = 0  # acknowledged by the target in this run
    bytes: int = 0  # keys, values and headers acknowledged in this run


ProgressCallback = Callable[[TopicProgress], None]


class TopicCopy:
    def __init__(
        self,
        source: Cluster,
        target: Cluster,
        checkpoint: Checkpoint,
        topic: str,
        partitions: int,
    ) -> None:
        self.source = source
        self.target = target
        self.checkpoint = checkpoint
        self.topic = topic
        self.partitions = list(range(partitions))
        self._skip: dict[int, int] = {}  # per partition: records at the range's start already on the target
        self._in_flight: dict[int, collections.deque[tuple[int, int]]] = {
            p: collections.deque() for p in self.partitions
        }
        self._failure: str | None = None
        self.progress = TopicProgress(topic, 0)

    def _map(self, partition: int) -> OffsetMap:
        return self.checkpoint.partitions[partition_key(self.topic, partition)]

    def plan(self) -> dict[int, tuple[int, int | None]]:
        """Each partition's source range for this run, [next uncopied offset, log end), after reconciling with the
        target. Sets `self._skip[p]`: how many records at the range's start are already on the target."""
        keys = [(self.topic, p) for p in self.partitions]
        source_marks = watermarks(self.source, keys, committed_only=True)
        starts = {}
        for p in self.partitions:
            saved = self.checkpoint.partitions.get(partition_key(self.topic, p))
            starts[p] = saved.next_target if saved is not None else OFFSET_BEGINNING
        probe = reader(self.target.settings, "kafkalite-migrate-target")
        try:
            tails = count_to_end(probe, self.topic, starts, idle_s=self.target.settings.timeout_s * 3)
        finally:
            probe.close()
        self._skip = {}
        ranges: dict[int, tuple[int, int | None]] = {}
        total = 0
        for p in self.partitions:
            key = partition_key(self.topic, p)
            source = source_marks[(self.topic, p)]
            extra, target_end = tails[p]
            saved = self.checkpoint.partitions.get(key)
            if saved is None:
                if extra:
                    raise AdminError(
                        f"{self.topic}[{p}] already holds {extra} record(s) on {self.target.settings.bootstrap}, not "
                        f"written by this migration (no progress recorded in {self.checkpoint.path}); migrate into "
                        "empty topics"
                    )
                saved = OffsetMap(next_source=source.start, next_target=target_end)
                self.checkpoint.partitions[key] = saved
            elif target_end < saved.next_target:
                raise AdminError(
                    f"{self.topic}[{p}] ends at offset {target_end} on {self.target.settings.bootstrap}, before the "
                    f"{saved.next_target} recorded in {self.checkpoint.path}: the target topic was changed or "
                    "recreated; delete the progress file and the target topic to start over"
                )
            first = max(saved.next_source, source.start)
            self._skip[p] = extra
            ranges[p] = (first, None)
            total += max(0, source.end - first)
        self.progress = TopicProgress(self.topic, total)
        return ranges

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        partition = message.partition() or 0
        source_offset, size = self._in_flight[partition].popleft()
        if error is not None:
            if self._failure is None:
                self._failure = f"writing {self.topic}[{partition}] to {self.target.settings.bootstrap}: {error.str()}"
            return
        if self._failure is None:  # after a failure nothing more is recorded: the map stays a gap-free prefix
            self._map(partition).record(source_offset, message.offset() or 0)
            self.progress.copied += 1
            self.progress.bytes += size

    def run(self, on_progress: ProgressCallback) -> TopicProgress:
        ranges = self.plan()
        on_progress(self.progress)
        consumer = reader(self.source.settings, "kafkalite-migrate")
        try:
            producer = Producer(
                self.target.settings.config(
                    **{
                        "enable.idempotence": True,
                        "acks": "all",
                        "linger.ms": 20,
                        "batch.size": 1_000_000,
                        "on_delivery": self._delivered,
                    }
                )
            )
        except KafkaException as exc:
            consumer.close()
            raise AdminError(kafka_message(exc)) from None
        saved_at = time.monotonic()
        try:
            idle_s = self.source.settings.timeout_s * 3
            for batch in read_ranges(consumer, self.topic, ranges, idle_s=idle_s):
                self._send(producer, batch)
                producer.poll(0)
                if self._failure is not None:
                    break
                if time.monotonic() - saved_at >= SAVE_EVERY_S:
                    self.checkpoint.save()
                    saved_at = time.monotonic()
                on_progress(self.progress)
        finally:
            remaining = producer.flush(self.target.settings.timeout_s * 3)
            consumer.close()
            self.checkpoint.save()
        if self._failure is not None:
            raise AdminError(self._failure)
        if remaining:
            raise AdminError(f"{remaining} record(s) of {self.topic} were not acknowledged by the target in time")
        unexplained = {p: n for p, n in self._skip.items() if n}
        if unexplained:
            where = ", ".join(f"{self.topic}[{p}]: {n}" for p, n in sorted(unexplained.items()))
            raise AdminError(
                f"the target holds more records than this migration wrote ({where}): it was written by someone else"
            )
        on_progress(self.progress)
        return self.progress

    def _send(self, producer: Producer, batch: list[Message]) -> None:
        produce = producer.produce
        in_flight = self._in_flight
        topic = self.topic
        for message in batch:
            partition = message.partition() or 0
            offset = message.offset() or 0
            if self._skip[partition]:
                # Already on the target (sent after the last save of an interrupted run): map, do not resend.
                self._skip[partition] -= 1
                saved = self._map(partition)
                saved.record(offset, saved.next_target)
                self.progress.copied += 1
                continue
            key, value = message.key(), message.value()
            headers: Any = message.headers()  # a list of (str, bytes) pairs, or None: passed on as it came
            kind, timestamp = message.timestamp()
            size = len(key or b"") + len(value or b"") + sum(len(n) + len(v or b"") for n, v in headers or ())
            in_flight[partition].append((offset, size))
            while True:
                try:
                    if kind == TIMESTAMP_NOT_AVAILABLE:
                        produce(topic, value, key, partition=partition, headers=headers)
                    else:
                        produce(topic, value, key, partition=partition, timestamp=timestamp, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)
