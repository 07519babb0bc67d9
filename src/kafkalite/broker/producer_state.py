"""Idempotent-producer state: per partition, per producer id, the epoch and the last few batches' sequences.

The rules (Kafka's, for a producer with `enable.idempotence=true`):
- a batch carries (producer_id, producer_epoch, base_sequence); its records use base_sequence .. +last_offset_delta;
- an epoch below the known one is fenced (INVALID_PRODUCER_EPOCH); a higher epoch restarts the sequence at 0;
- a batch equal to one of the last `CACHED_BATCHES` appended batches is a duplicate: it is acknowledged with the
  original offsets and not appended again (this is what makes a producer's retry after a lost response safe);
- otherwise the base sequence must follow the last one (wrapping at 2^31), else OUT_OF_ORDER_SEQUENCE_NUMBER;
- a producer id never seen here is accepted at any sequence, as state may have been lost to retention;
- a transaction marker (`check_marker`, then `observe_marker`) must not carry an older epoch than the producer's
  (INVALID_PRODUCER_EPOCH; with transaction version 2, KIP-1228, not an equal one either) nor an older coordinator
  epoch than the last marker's (TRANSACTION_COORDINATOR_FENCED); a marker with a newer epoch (KIP-890 part 2 bumps
  the epoch at every EndTxn) moves the producer to it, so a late write of the old epoch is fenced here too.

The table is rebuilt on start from the batch headers in the log (`observe`), so it survives restarts and crashes. A
producer idle for `producer.id.expiration.ms` with no transaction open is forgotten (`remove_expired`): its next batch
is accepted at any sequence, and a log cleaning no longer keeps its last batch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field

from kafkalite.errors import (
    CoordinatorFencedError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
)
from kafkalite.protocol.records import BatchHeader

CACHED_BATCHES = 5  # Kafka keeps the last 5: max.in.flight.requests.per.connection for idempotence
INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class AppendedBatch:
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[AppendedBatch] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    last_timestamp: int = -1  # max timestamp of its last batch (DescribeProducers)
    coordinator_epoch: int = -1  # of the last marker written for it (DescribeProducers; fences older coordinators)
    marker_offset: int = -1  # of its last marker at this epoch (transaction version 2 bumps the epoch at every EndTxn)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


def _last_sequence(header: BatchHeader) -> int:
    last = header.base_sequence + header.last_offset_delta
    return last - INT32_MAX - 1 if last > INT32_MAX else last


class ProducerStateTable:
    """Sequence bookkeeping for one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def check(self, header: BatchHeader) -> None:
        """Raise if the batch must not be appended: duplicate (with the original offsets), fenced, or out of order."""
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than {entry.epoch}"
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequenceError(
                    f"producer {header.producer_id} new epoch {header.producer_epoch} must start at sequence 0, "
                    f"got {header.base_sequence}"
                )
            return
        last_sequence = _last_sequence(header)
        for batch in entry.batches:
            if batch.first_sequence == header.base_sequence and batch.last_sequence == last_sequence:
                raise DuplicateSequenceError(
                    f"producer {header.producer_id} batch {header.base_sequence}..{last_sequence} already appended",
                    batch.base_offset,
                )
        expected = 0 if entry.last_sequence == INT32_MAX else entry.last_sequence + 1
        if header.base_sequence != expected:
            raise OutOfOrderSequenceError(
                f"producer {header.producer_id} sent sequence {header.base_sequence}, expected {expected}"
            )

    def observe(self, header: BatchHeader) -> None:
        """Record an appended batch (its header already carries the assigned base offset)."""
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            previous = entry
            entry = ProducerEntry(header.producer_epoch)
            entry.coordinator_epoch = previous.coordinator_epoch if previous else -1
            self._producers[header.producer_id] = entry
        entry.batches.append(
            AppendedBatch(header.base_sequence, _last_sequence(header), header.base_offset, header.last_offset)
        )
        entry.last_timestamp = header.max_timestamp

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, *, strict: bool = False) -> None:
        """Raise if a marker of `producer_id` at `epoch` must not be written (`strict`: transaction version 2 markers
        carry an epoch bumped past the producer's, so an equal one is a late duplicate)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch or (strict and epoch == entry.epoch):
            raise InvalidProducerEpochError(
                f"marker of producer {producer_id} carries epoch {epoch}, "
                f"{'not above' if strict else 'older than'} the last seen epoch {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise CoordinatorFencedError(
                f"marker of producer {producer_id} carries coordinator epoch {coordinator_epoch}, older than "
                f"{entry.coordinator_epoch}"
            )

    def observe_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, timestamp: int, offset: int) -> None:
        """Record a marker written at `offset`: a newer epoch replaces the entry (its sequences start again at 0), and
        until the producer writes at that epoch the marker is the log's only record of it."""
        entry = self._producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            previous = entry
            entry = ProducerEntry(epoch)
            entry.coordinator_epoch = previous.coordinator_epoch if previous else -1
            self._producers[producer_id] = entry
        if epoch == entry.epoch:
            entry.marker_offset = offset
        entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        entry.last_timestamp = timestamp

    def entries(self) -> dict[int, ProducerEntry]:
        """Producer id → its entry (read-only view for DescribeProducers)."""
        return dict(self._producers)

    def last_offsets(self) -> dict[int, int]:
        """Producer id → the last offset of the batch that holds its state, which a log cleaning must keep: its last
        data batch (sequences and epoch), or, when it has written none at its epoch, its last marker, the one record
        of that epoch (Kafka keeps it too: after a restart the epoch still fences the producer's zombies)."""
        kept = {}
        for pid, entry in self._producers.items():
            if entry.batches:
                kept[pid] = entry.batches[-1].last_offset
            elif entry.marker_offset >= 0:
                kept[pid] = entry.marker_offset
        return kept

    def remove_expired(self, cutoff_ms: int, keep: Collection[int]) -> list[int]:
        """Forget every producer whose last batch or marker is stamped at or before `cutoff_ms` (Kafka's
        `producer.id.expiration.ms`, measured as Kafka measures it: from the batch's max timestamp), except those in
        `keep` (producers with a transaction open here); return their ids."""
        expired = [
            pid for pid, entry in self._producers.items() if entry.last_timestamp <= cutoff_ms and pid not in keep
        ]
        for pid in expired:
            del self._producers[pid]
        return expired

    def max_producer_id(self) -> int:
        return max(self._producers, default=-1)
