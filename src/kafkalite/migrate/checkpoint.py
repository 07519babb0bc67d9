"""The migration's progress file: how far each partition is copied and where its records landed.

Format (JSON, replaced atomically: written to `<file>.tmp`, fsynced, renamed over `<file>`)::

    {"format": 1, "source": "host:port", "target": "host:port",
     "partitions": {"orders/0": {"next_source": 120, "next_target": 118, "runs": [[0, 0, 50], [52, 50, 68]]}, ...},
     "groups": {"billing": {"orders/0": 118, ...}}}

`partitions` holds an `OffsetMap` per source partition (see `offset_map`), saved from delivery reports only, so the
file never claims a record the target has not acknowledged. The target may hold a few records more than the file
says (sent after the last save, before an interruption): a resumed run counts them from the target's end offset and
skips that many source records, so nothing is copied twice. `groups` records the offsets last committed on the
target, for the report.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalite.admin import AdminError
from kafkalite.migrate.offset_map import OffsetMap

FORMAT = 1


def partition_key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


@dataclass
class Checkpoint:
    path: Path
    source: str
    target: str
    partitions: dict[str, OffsetMap] = field(default_factory=dict)
    groups: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path, source: str, target: str) -> Checkpoint:
        """The saved progress of this source → target migration, or a fresh one when the file does not exist."""
        if not path.exists():
            return cls(path, source, target)
        try:
            document: dict[str, Any] = json.loads(path.read_text())
            if document.get("format") != FORMAT:
                raise ValueError(f"format {document.get('format')!r}, expected {FORMAT}")
            saved = cls(
                path,
                str(document["source"]),
                str(document["target"]),
                {key: OffsetMap.from_json(value) for key, value in document["partitions"].items()},
                {group: dict(offsets) for group, offsets in document.get("groups", {}).items()},
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"cannot read the progress file {path}: {exc}") from None
        if (saved.source, saved.target) != (source, target):
            raise CheckpointError(
                f"the progress file {path} belongs to a migration from {saved.source} to {saved.target}; "
                f"give another --state file for {source} to {target}"
            )
        return saved

    def save(self) -> None:
        document = {
            "format": FORMAT,
            "source": self.source,
            "target": self.target,
            "partitions": {key: value.to_json() for key, value in sorted(self.partitions.items())},
            "groups": self.groups,
        }
        temp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(temp, "w") as stream:
                json.dump(document, stream, separators=(",", ":"))
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temp, self.path)
        except OSError as exc:
            raise CheckpointError(f"cannot write the progress file {self.path}: {exc.strerror or exc}") from None


class CheckpointError(AdminError):
    """The progress file is unreadable or belongs to another migration."""
