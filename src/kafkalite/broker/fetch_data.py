"""`FetchData`: one partition's read, as `Partition.read` and `Partition.read_for_send` return it.

Compiled with the partition (`kafkalite.protocol.native.COMPILED_MODULES`): the compiled Fetch handler reads its
fields by position, so an edit to it must retire the build as an edit to any compiled module does.
"""

from __future__ import annotations

from typing import Generic, NamedTuple, TypeVar

from kafkalite.storage import AbortedTxn, FileRecords

RecordsT = TypeVar("RecordsT", bytes, bytes | FileRecords)


class FetchData(NamedTuple, Generic[RecordsT]):
    """One partition's read: `bytes`, or for a Fetch answer (`Partition.read_for_send`) possibly `FileRecords`.

    A named tuple rather than a frozen dataclass: every Fetch a consumer sends makes one or two, and a frozen
    dataclass's `__init__` sets each field through `object.__setattr__` in Python. The compiled partition makes it
    with `tuple.__new__` (`partition._fetch_data`)."""

    records: RecordsT
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int
    aborted_transactions: list[AbortedTxn] | None = None  # None unless read_committed
