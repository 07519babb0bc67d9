"""`FetchData`: one partition's read, as `Partition.read` and `Partition.read_for_send` return it.

A module of its own because it is generic: `broker/partition.py` may run compiled (mypyc, see
`kafkalite.protocol.native`), and a generic dataclass stays an interpreted class, which compiled code uses as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kafkalite.storage import AbortedTxn, FileRecords

RecordsT = TypeVar("RecordsT", bytes, bytes | FileRecords)


@dataclass(frozen=True, slots=True)
class FetchData(Generic[RecordsT]):
    """One partition's read: `bytes`, or for a Fetch answer (`Partition.read_for_send`) possibly `FileRecords`."""

    records: RecordsT
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int
    aborted_transactions: list[AbortedTxn] | None = field(default=None)  # None unless read_committed
