"""Records in: one message per input line, through librdkafka's producer.

A line is split at the first `key_separator` into key and value (a line without it is a value with a null key);
the line terminator is not part of the message. Every message gets the same headers and, when one is given, the same
partition; otherwise the producer's partitioner places it (librdkafka's default, murmur2 on the key, as the Java
client). Delivery reports are requested for failures only, so the loop pays nothing per message that succeeds.
Input is read in chunks and split into lines in C; values without keys or headers are handed to librdkafka through
`map`, so the per-message Python work is one C call.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kafkalite.admin.connection import AdminError, ClientSettings, Cluster, kafka_message
from kafkalite.admin.topics import topic_metadata

ACKS = {"0": "0", "1": "1", "all": "all", "-1": "all"}
CHUNK = 1 << 20  # bytes read at a time
SLICE = 50_000  # values handed to librdkafka in one go
QUEUE_MESSAGES = 500_000  # librdkafka's queue.buffering.max.messages for this producer
ANY_PARTITION = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner chooses


@dataclass
class ProduceResult:
    messages: int = 0  # handed to the producer
    bytes: int = 0  # keys + values
    failed: int = 0
    first_error: str | None = None
    seconds: float = 0.0

    @property
    def delivered(self) -> int:
        return self.messages - self.failed


def check_partition(cluster: Cluster, topic: str, partition: int | None, *, create: bool = True) -> int:
    """The topic's partition count, after checking `partition` exists; a topic the broker does not know is created on
    demand where the broker allows it (a Metadata request naming it), else AdminError."""
    try:
        metadata = topic_metadata(cluster, topic)
    except AdminError:
        if not create:
            raise
        metadata = cluster.refresh(topic).topics.get(topic)  # type: ignore[assignment]
        if metadata is None or metadata.error is not None or not metadata.partitions:
            raise AdminError(
                f"topic {topic!r} does not exist on {cluster.settings.bootstrap} (and the broker does not create "
                "topics on demand)"
            ) from None
    count = len(metadata.partitions)
    if partition is not None and not 0 <= partition < count:
        raise AdminError(f"topic {topic!r} has no partition {partition} (it has {count})")
    return count


class LineProducer:
    """Produces lines to one topic; `send` may be called with several inputs, `close` flushes and reports."""

    def __init__(
        self,
        settings: ClientSettings,
        topic: str,
        *,
        partition: int | None = None,
        acks: str = "all",
        key_separator: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        if acks not in ACKS:
            raise AdminError(f"bad acks {acks!r}: expected 0, 1 or all")
        self.topic = topic
        self.result = ProduceResult()
        self._started = time.perf_counter()
        self._separator = key_separator or None
        self._partition = ANY_PARTITION if partition is None else partition
        self._headers: list[tuple[str, str | bytes | None]] | None = list(headers) if headers else None
        config = settings.config(
            **{
                "acks": ACKS[acks],
                "linger.ms": 20,
                "queue.buffering.max.messages": QUEUE_MESSAGES,
                "delivery.report.only.error": True,
                "message.timeout.ms": max(30_000, int(settings.timeout_s * 3000)),
                "on_delivery": self._delivered,
            }
        )
        try:
            self._producer = Producer(config)
        except KafkaException as exc:
            raise AdminError(kafka_message(exc)) from None

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.result.failed += 1
            if self.result.first_error is None:
                self.result.first_error = f"{self.topic}[{message.partition()}]: {error.str()}"

    def send(self, stream: BinaryIO, progress: Callable[[int], None] | None = None) -> None:
        """Produce every line of `stream`; `progress(n)` is told of every `n` bytes read.

        Reads with `read1` (whatever is available, up to `CHUNK`), so lines piped in slowly are sent as they come
        rather than when a buffer fills.
        """
        read = getattr(stream, "read1", stream.read)  # BufferedReader's read1: no waiting for a full chunk
        rest = b""
        while chunk := read(CHUNK):
            if progress is not None:
                progress(len(chunk))
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            self._send_lines(lines)
        if rest:
            self._send_lines([rest])

    def _send_lines(self, lines: list[bytes]) -> None:
        if any(line.endswith(b"\r") for line in lines):
            lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
        if self._separator is None and self._headers is None:
            self._send_values(lines)
        else:
            self._send_keyed(lines)
        self.result.messages += len(lines)

    def _send_values(self, values: list[bytes]) -> None:
        """No keys, no headers: `map` drives librdkafka's produce from C, after making room for a whole slice."""
        send = functools.partial(self._producer.produce, self.topic, partition=self._partition)
        for start in range(0, len(values), SLICE):
            part = values[start : start + SLICE]
            while len(self._producer) + len(part) > QUEUE_MESSAGES:
                self._producer.poll(0.05)
            collections.deque(map(send, part), maxlen=0)
            self._producer.poll(0)
            self.result.bytes += sum(map(len, part))

    def _send_keyed(self, lines: list[bytes]) -> None:
        produce, poll = self._producer.produce, self._producer.poll
        topic, separator, partition, headers = self.topic, self._separator, self._partition, self._headers
        size = 0
        for line in lines:
            key: bytes | None = None
            if separator is not None:
                head, found, tail = line.partition(separator)
                if found:
                    key, line = head, tail
            while True:
                try:
                    produce(topic, line, key, partition, headers=headers)
                    break
                except BufferError:  # librdkafka's queue is full: let it send, then try again
                    poll(0.05)
            size += len(line) + (len(key) if key is not None else 0)
        poll(0)
        self.result.bytes += size

    def close(self) -> ProduceResult:
        """Wait for every message to be acknowledged (or to fail) and return the totals."""
        remaining = self._producer.flush()
        self.result.failed += remaining
        if remaining and self.result.first_error is None:
            self.result.first_error = f"{remaining} message(s) were not delivered"
        self.result.seconds = time.perf_counter() - self._started
        return self.result
