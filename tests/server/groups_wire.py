"""What the consumer-group tests over the wire (`test_groups_*.py`) share: the wait, broker settings, the balance."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

WAIT_S = 30.0
# Session timeouts down to 100 ms, so a group of real clients rebalances in well under a second; no fsync to wait on.
SETTINGS: dict[str, Any] = {"group_min_session_timeout_ms": 100, "fsync": False}


def balanced(consumers: Sequence[Any], partitions: int) -> Callable[[], bool]:
    """Every consumer owns at least one partition; together they own each partition exactly once."""

    def check() -> bool:
        owned = [{tp.partition for tp in c.assignment()} for c in consumers]
        return all(owned) and sum(map(len, owned)) == partitions and set().union(*owned) == set(range(partitions))

    return check
