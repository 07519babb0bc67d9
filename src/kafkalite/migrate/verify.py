"""Comparing source and target partition by partition: record counts and a checksum of every record in order.

A record's checksum input is its key, value (each length-prefixed, -1 for null), timestamp (when it carries one) and
headers (count, then each name and value length-prefixed), fed in offset order into one SHA-256 per partition.
Offsets are not part of it: they may differ between the clusters (see `offset_map`). Each side is read from its log
start to its end (see `reading`), read_committed; run it once producers to the source have stopped, or records
written meanwhile count as differences.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Message

from kafkalite.admin import Cluster
from kafkalite.admin.consume import header_pairs
from kafkalite.migrate.reading import read_ranges, reader

_LENGTH = struct.Struct(">i")
_TIMESTAMP = struct.Struct(">q")


@dataclass(frozen=True)
class PartitionCheck:
    topic: str
    partition: int
    source_count: int
    target_count: int
    source_checksum: str
    target_checksum: str

    @property
    def ok(self) -> bool:
        return self.source_count == self.target_count and self.source_checksum == self.target_checksum


def _field(digest: hashlib._Hash, data: bytes | None) -> None:
    if data is None:
        digest.update(_LENGTH.pack(-1))
    else:
        digest.update(_LENGTH.pack(len(data)))
        digest.update(data)


def _absorb(digest: hashlib._Hash, message: Message) -> None:
    _field(digest, message.key())
    _field(digest, message.value())
    kind, timestamp = message.timestamp()
    digest.update(_TIMESTAMP.pack(timestamp if kind else -1))
    headers = header_pairs(message)
    digest.update(_LENGTH.pack(len(headers)))
    for name, value in headers:
        _field(digest, name.encode())
        _field(digest, value)


def checksums(cluster: Cluster, topic: str, partitions: Sequence[int]) -> dict[int, tuple[int, str]]:
    """(record count, SHA-256 hex) of every partition's records from its log start to its current end."""
    digests = {p: hashlib.sha256() for p in partitions}
    counts = dict.fromkeys(partitions, 0)
    consumer = reader(cluster.settings, "kafkalite-migrate-verify")
    try:
        ranges: dict[int, tuple[int, int | None]] = {p: (OFFSET_BEGINNING, None) for p in partitions}
        for batch in read_ranges(consumer, topic, ranges, idle_s=cluster.settings.timeout_s * 3):
            for message in batch:
                partition = message.partition() or 0
                _absorb(digests[partition], message)
                counts[partition] += 1
    finally:
        consumer.close()
    return {p: (counts[p], digests[p].hexdigest()) for p in partitions}


def verify_topic(
    source: Cluster, target: Cluster, topic: str, partitions: int, on_partition: Callable[[PartitionCheck], None]
) -> list[PartitionCheck]:
    chosen = list(range(partitions))
    theirs, ours = checksums(source, topic, chosen), checksums(target, topic, chosen)
    checks = []
    for p in chosen:
        check = PartitionCheck(topic, p, theirs[p][0], ours[p][0], theirs[p][1], ours[p][1])
        on_partition(check)
        checks.append(check)
    return checks
