"""Which target offset each copied source offset landed at, per partition, as runs.

Records are copied in order, one partition to the same partition, by one idempotent producer, into a target
partition nobody else writes: target offsets are therefore consecutive while source offsets may skip (compacted
records, transaction markers, aborted records). The map is a list of runs `(source_start, target_start, length)`:
within a run both sides advance together; a new run starts wherever the source skipped. A source without gaps is one
run per partition, however many records it holds.

Translating a consumer group's committed offset C (the next record it would read):
- C inside a run → the same distance into the run on the target;
- C in a gap, or before the first run → the target offset of the next copied record;
- C at or past everything copied → `next_target`, the offset the next copied record will get.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any


@dataclass
class OffsetMap:
    next_source: int  # every source record below this offset is on the target (acknowledged)
    next_target: int  # the target offset the next copied record gets
    runs: list[list[int]] = field(default_factory=list)  # [source_start, target_start, length], ascending

    def record(self, source_offset: int, target_offset: int) -> None:
        """One more record copied (in order): extends the last run or starts a new one."""
        if self.runs:
            last = self.runs[-1]
            if source_offset == last[0] + last[2] and target_offset == last[1] + last[2]:
                last[2] += 1
                self.next_source, self.next_target = source_offset + 1, target_offset + 1
                return
        self.runs.append([source_offset, target_offset, 1])
        self.next_source, self.next_target = source_offset + 1, target_offset + 1

    def translate(self, source_offset: int) -> int:
        """The target offset a consumer that would next read `source_offset` should next read (see module doc)."""
        starts = [run[0] for run in self.runs]
        index = bisect.bisect_right(starts, source_offset) - 1
        if index >= 0:
            start, target, length = self.runs[index]
            if source_offset < start + length:
                return target + (source_offset - start)
        following = index + 1
        if following < len(self.runs):
            return self.runs[following][1]
        return self.next_target

    @property
    def copied(self) -> int:
        return sum(run[2] for run in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {"next_source": self.next_source, "next_target": self.next_target, "runs": self.runs}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> OffsetMap:
        return cls(int(document["next_source"]), int(document["next_target"]), [list(r) for r in document["runs"]])
