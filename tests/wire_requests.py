"""Request fields the raw-bytes tests send again and again, for their clients' `request`/`encode` (which keep the
fields the request's version has and drop the rest, so one set serves every version)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def consumer_fetch(
    topics: Sequence[Any], *, max_wait: int = 0, min_bytes: int = 1, isolation_level: int = 0, max_bytes: int = 1 << 20
) -> dict[str, Any]:
    """A consumer's Fetch of `topics` (FetchTopic entities): no fetch session, no rack, nothing forgotten."""
    return {
        "cluster_id": None,
        "replica_id": -1,
        "max_wait": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "topics": list(topics),
        "forgotten_topics_data": [],
        "rack_id": "",
    }
