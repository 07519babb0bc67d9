"""Choosing a partition for a record.

- `md5` (KafkaLite's default, the seed's rule): `int(hashlib.md5(key).hexdigest(), 16) % num_partitions`.
- `murmur2`: the Java client's default for keyed records, `(murmur2(key) & 0x7fffffff) % num_partitions`, so keys
  land where Java, librdkafka's `murmur2_random` and kafka-python producers put them.
- `round_robin`: every record to the next partition, keys ignored.
Records without a key go round robin under every partitioner.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Literal

PartitionerName = Literal["md5", "murmur2", "round_robin"]
KeyHash = Callable[[bytes], int]

_MASK32 = 0xFFFFFFFF


def md5_hash(key: bytes) -> int:
    """The same number as `int(hashlib.md5(key).hexdigest(), 16)`, without the hex round trip."""
    return int.from_bytes(hashlib.md5(key).digest(), "big")


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (32-bit, seed 0x9747b28c), as a signed 32-bit int like Java's `Utils.murmur2`."""
    length = len(data)
    m = 0x5BD1E995
    h = (0x9747B28C ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    rest = length % 4
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2_positive(key: bytes) -> int:
    return murmur2(key) & 0x7FFFFFFF


class Partitioner:
    """Picks the partition of each record of one producer; round robin keeps one counter per topic."""

    def __init__(self, name: PartitionerName = "md5") -> None:
        hashes: dict[str, KeyHash | None] = {"md5": md5_hash, "murmur2": murmur2_positive, "round_robin": None}
        if name not in hashes:
            raise ValueError(f"unknown partitioner {name!r}: choose md5, murmur2 or round_robin")
        self.name = name
        self._hash = hashes[name]
        self._counters: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        if key is not None and self._hash is not None:
            return self._hash(key) % num_partitions
        return self.round_robin_run(topic, 1) % num_partitions

    def hashes_key(self, key: bytes | None) -> bool:
        """True if `key` decides the partition (a keyed record under md5 or murmur2)."""
        return key is not None and self._hash is not None

    def round_robin_run(self, topic: str, count: int) -> int:
        """Take the next `count` round-robin slots of `topic` at once; return the first (slot i goes to partition
        `(first + i) % num_partitions`), exactly as `count` calls of `partition` would have placed them."""
        first = self._counters.get(topic, 0)
        self._counters[topic] = first + count
        return first
