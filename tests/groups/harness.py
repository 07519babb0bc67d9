"""A tiny driver around GroupCoordinator for tests: deterministic member ids, a clock, and a reply mailbox."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalite.groups import (
    CompletedReply,
    GroupConfig,
    GroupCoordinator,
    JoinPending,
    JoinResult,
    SyncPending,
    SyncResult,
)

GROUP = "g"
PROTOCOLS = (("range", b"meta"),)


def counter_ids() -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: str(next(numbers))


def make_config(**kwargs: Any) -> GroupConfig:
    settings: dict[str, Any] = {"min_session_timeout_ms": 1, "new_member_id_suffix": counter_ids()}
    settings.update(kwargs)
    return GroupConfig(**settings)


@dataclass
class Harness:
    config: GroupConfig = field(default_factory=lambda: make_config())
    now: int = 0
    mailbox: dict[int, CompletedReply] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.coordinator = GroupCoordinator(self.config)

    def drain(self) -> None:
        self.mailbox.update(self.coordinator.take_completed())

    def join(self, member_id: str = "", *, client_id: str = "c", **kwargs: Any) -> JoinResult | JoinPending:
        args: dict[str, Any] = {
            "protocol_type": "consumer",
            "protocols": PROTOCOLS,
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 30_000,
        }
        args.update(kwargs)
        result = self.coordinator.join(GROUP, member_id, now_ms=self.now, client_id=client_id, **args)
        self.drain()
        return result

    def sync(self, member_id: str, generation: int, **kwargs: Any) -> SyncResult | SyncPending:
        result = self.coordinator.sync(GROUP, member_id, generation, now_ms=self.now, **kwargs)
        self.drain()
        return result

    def heartbeat(self, member_id: str, generation: int) -> int:
        result = self.coordinator.heartbeat(GROUP, member_id, generation, now_ms=self.now)
        self.drain()
        return result.error_code

    def tick(self, now: int) -> None:
        self.now = now
        self.coordinator.tick(now)
        self.drain()

    def joined(self, result: JoinResult | JoinPending) -> JoinResult:
        """The JoinResult now, whether it came back at once or through the outbox."""
        if isinstance(result, JoinPending):
            reply = self.mailbox.pop(result.ticket)
            assert isinstance(reply, JoinResult)
            return reply
        return result

    def synced(self, result: SyncResult | SyncPending) -> SyncResult:
        if isinstance(result, SyncPending):
            reply = self.mailbox.pop(result.ticket)
            assert isinstance(reply, SyncResult)
            return reply
        return result

    def state(self) -> str:
        return self.coordinator.describe(GROUP).state
