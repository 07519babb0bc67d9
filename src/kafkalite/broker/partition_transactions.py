"""Per partition: the transactions still open in it, which is what the last stable offset (LSO) is made of.

A transactional batch (transactional bit set, not a control batch) of producer P opens P's transaction in this
partition at its base offset, unless one is open already; P's next commit or abort marker closes it. The LSO is the
first offset of the oldest open transaction, or the high watermark when none is open: a read_committed consumer
reads nothing at or past it, because whether those records count is not decided yet.

The table is rebuilt on start from the batch headers of the log tail (`Partition._rebuild_producer_state`), together
with the idempotence table, so an open transaction found there keeps the LSO down until the coordinator ends it. A
transaction the coordinator knows to be open whose first batch lies before that tail is found by a scan of the whole
log (`Partition.find_open_transaction`, rare: only across a restart) and set with `reopen`.
"""

from __future__ import annotations

from kafkalite.protocol.records import BatchHeader


class OpenTransactions:
    """Producer id → offset of the first batch of its open transaction in this partition."""

    __slots__ = ("_first_offsets",)

    def __init__(self) -> None:
        self._first_offsets: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._first_offsets)

    def observe(self, header: BatchHeader) -> None:
        """A transactional data batch was appended at `header.base_offset`."""
        self._first_offsets.setdefault(header.producer_id, header.base_offset)

    def reopen(self, producer_id: int, first_offset: int) -> None:
        """Set where `producer_id`'s open transaction began (found by a scan of the whole log on start)."""
        self._first_offsets[producer_id] = first_offset

    def close(self, producer_id: int) -> int | None:
        """A marker of `producer_id` was appended: forget its open transaction, returning its first offset."""
        return self._first_offsets.pop(producer_id, None)

    def producer_ids(self) -> list[int]:
        return list(self._first_offsets)

    def first_offset(self, producer_id: int) -> int | None:
        return self._first_offsets.get(producer_id)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction; None when none is open (the log cleaner's bound)."""
        return min(self._first_offsets.values(), default=None)

    def last_stable_offset(self, high_watermark: int) -> int:
        if not self._first_offsets:
            return high_watermark
        return min(min(self._first_offsets.values()), high_watermark)
