"""The security stores' files: one JSON document each under `<data_dir>/_kafkalite/security/`.

Format: `{"version": 1, <field>: ...}`. Written atomically (temp file, fsync, rename, fsync the directory) with mode
0600 in a 0700 directory, since they hold credential hashes and access rules. A file that is not such a document is a
`StorageError` at start, never silently an empty store.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

from kafkalite.errors import StorageError
from kafkalite.storage import read_file, write_atomically

SECURITY_DIR: Final = Path("_kafkalite") / "security"
VERSION: Final = 1

T = TypeVar("T")


def document_path(data_dir: Path | None, name: str) -> Path | None:
    return None if data_dir is None else data_dir / SECURITY_DIR / name


def load(path: Path | None, field: str, parse: Callable[[Any], T], what: str) -> T | None:
    """`parse(document[field])` of the file at `path`; None when there is no file (or no data directory)."""
    if path is None:
        return None
    raw = read_file(path)
    if raw is None:
        return None
    try:
        document = json.loads(raw)
        if document.get("version") != VERSION:
            raise ValueError(f"unknown version {document.get('version')!r}")
        return parse(document[field])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StorageError(f"{path} is not a KafkaLite {what} file: {exc}") from None


def save(path: Path | None, field: str, value: Any, *, fsync: bool) -> None:
    """Replace the file at `path` with `{"version": 1, field: value}`; nothing without a data directory."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = json.dumps({"version": VERSION, field: value}, indent=1, sort_keys=True).encode()
    write_atomically(path, data, fsync=fsync)
    os.chmod(path, 0o600)
