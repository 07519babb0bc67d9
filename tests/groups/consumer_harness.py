"""A KIP-848 coordinator with an injected clock and simulated clients that hold what they are given."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kafkalite.groups import ConsumerGroupConfig, ConsumerGroupCoordinator, HeartbeatRequest
from kafkalite.groups.consumer_coordinator import HeartbeatResult

GROUP = "g"
TOPIC_A = uuid.UUID(int=0xA)
TOPIC_B = uuid.UUID(int=0xB)
SESSION_MS = 1000
INTERVAL_MS = 100


@dataclass
class Client:
    """One consumer as librdkafka behaves: it drops revoked partitions at once and reports what it holds."""

    member_id: str
    epoch: int = 0
    held: set[tuple[uuid.UUID, int]] = field(default_factory=set)
    instance_id: str | None = None


class Harness:
    def __init__(self, **config: Any) -> None:
        self.now = 0
        self.topics: dict[str, tuple[uuid.UUID, int]] = {"a": (TOPIC_A, 6), "b": (TOPIC_B, 4)}
        settings = {"session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": INTERVAL_MS, **config}
        self.coordinator = ConsumerGroupCoordinator(ConsumerGroupConfig(**settings))

    def heartbeat(self, member_id: str, epoch: int, **fields: Any) -> HeartbeatResult:
        request = HeartbeatRequest(GROUP, member_id, epoch, **fields)
        return self.coordinator.heartbeat(request, topics=self.topics, now_ms=self.now)

    def join(self, member_id: str, topics: tuple[str, ...] = ("a",), **fields: Any) -> Client:
        fields.setdefault("rebalance_timeout_ms", 5000)
        result = self.heartbeat(member_id, 0, subscribed_topic_names=topics, owned=(), **fields)
        assert result.error_code == 0, result
        client = Client(member_id, instance_id=fields.get("instance_id"))
        self.apply(client, result)
        return client

    def beat(self, client: Client, **fields: Any) -> HeartbeatResult:
        """A heartbeat reporting everything the client holds, as librdkafka sends after a change."""
        owned = tuple((t, tuple(sorted(p for tt, p in client.held if tt == t))) for t in {t for t, _ in client.held})
        result = self.heartbeat(client.member_id, client.epoch, owned=owned, instance_id=client.instance_id, **fields)
        if result.error_code == 0:
            self.apply(client, result)
        return result

    @staticmethod
    def apply(client: Client, result: HeartbeatResult) -> None:
        client.epoch = result.member_epoch
        if result.assignment is not None:
            client.held = {(t, p) for t, ps in result.assignment.items() for p in ps}

    def settle(self, clients: list[Client], rounds: int = 10) -> None:
        for _ in range(rounds):
            for c in clients:
                assert self.beat(c).error_code == 0
                assert_disjoint(clients)

    def owned_by(self, client: Client) -> set[int]:
        return {p for _, p in client.held}


def assert_disjoint(clients: list[Client]) -> None:
    """No partition is held by two clients at any instant."""
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for c in clients:
        for tp in c.held:
            assert tp not in seen, f"{tp} held by {seen[tp]} and {c.member_id}"
            seen[tp] = c.member_id
