"""Reconciliation under random schedules: no partition is ever held by two clients, and a group always converges.

Clients behave like librdkafka's: each heartbeat reports what the client holds (or nothing, as when it has nothing
new to say); an answer's assignment replaces what it holds at once (revocations first). A client that is fenced
or told it is unknown drops everything and rejoins. Time moves by the test's clock; a client silent for a session is
treated as crashed (it holds nothing once the coordinator fenced it).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.groups import ConsumerGroupState
from kafkalite.groups.consumer_group import partitions_of

from .consumer_harness import GROUP, SESSION_MS, Client, Harness, assert_disjoint

N_CLIENTS = 4

operations = st.lists(
    st.one_of(
        st.tuples(st.just("beat"), st.integers(0, N_CLIENTS - 1)),
        st.tuples(st.just("beat_silent"), st.integers(0, N_CLIENTS - 1)),
        st.tuples(st.just("leave"), st.integers(0, N_CLIENTS - 1)),
        st.tuples(st.just("static_leave"), st.integers(0, N_CLIENTS - 1)),
        st.tuples(st.just("subscribe_b"), st.integers(0, N_CLIENTS - 1)),
        st.tuples(st.just("time"), st.integers(1, SESSION_MS)),
        st.tuples(st.just("grow"), st.integers(0, 1)),
    ),
    max_size=60,
)


def check_server(h: Harness) -> None:
    group = h.coordinator._groups.get(GROUP)
    if group is None:
        return
    claimed: dict[object, str] = {}
    for member in group.members.values():
        assert not member.assigned & member.pending_revocation
        for tp in member.assigned | member.pending_revocation:
            assert tp not in claimed, f"{tp} owned by {claimed[tp]} and {member.member_id}"
            claimed[tp] = member.member_id
    assert claimed == group.owners


class Simulation:
    def __init__(self) -> None:
        self.h = Harness()
        self.clients: dict[int, Client | None] = dict.fromkeys(range(N_CLIENTS))
        self.topics: dict[int, tuple[str, ...]] = dict.fromkeys(range(N_CLIENTS), ("a",))
        self.joins = 0

    def live(self) -> list[Client]:
        return [c for c in self.clients.values() if c is not None]

    def beat(self, i: int, silent: bool = False) -> None:
        client = self.clients[i]
        if client is None:
            self.joins += 1
            instance = f"i{i}" if i % 2 else None
            result = self.h.heartbeat(
                f"m{i}-{self.joins}",
                0,
                subscribed_topic_names=self.topics[i],
                rebalance_timeout_ms=2 * SESSION_MS,
                owned=(),
                instance_id=instance,
            )
            if result.error_code == 0:
                client = Client(f"m{i}-{self.joins}", instance_id=instance)
                self.h.apply(client, result)
                self.clients[i] = client
            return
        if silent:
            result = self.h.heartbeat(client.member_id, client.epoch, instance_id=client.instance_id)
            if result.error_code == 0:
                self.h.apply(client, result)
        else:
            result = self.h.beat(client)
        if result.error_code:
            self.clients[i] = None  # fenced: it drops what it held and rejoins later

    def step(self, op: str, arg: int) -> None:
        h = self.h
        if op in ("beat", "beat_silent"):
            self.beat(arg, silent=op == "beat_silent")
        elif op in ("leave", "static_leave") and self.clients[arg] is not None:
            client = self.clients[arg]
            assert client is not None
            static = op == "static_leave" and client.instance_id is not None
            result = h.heartbeat(client.member_id, -2 if static else -1, instance_id=client.instance_id)
            assert result.error_code == 0
            self.clients[arg] = None
        elif op == "subscribe_b":
            self.topics[arg] = ("a", "b") if self.topics[arg] == ("a",) else ("a",)
            client = self.clients[arg]
            if client is not None:
                result = h.heartbeat(
                    client.member_id,
                    client.epoch,
                    subscribed_topic_names=self.topics[arg],
                    instance_id=client.instance_id,
                )
                if result.error_code == 0:
                    h.apply(client, result)
                else:
                    self.clients[arg] = None
        elif op == "time":
            h.now += arg
            h.coordinator.tick(h.now)
            group = h.coordinator._groups.get(GROUP)
            members = set() if group is None else set(group.members)
            for i, client in self.clients.items():
                if client is not None and client.member_id not in members:
                    self.clients[i] = None  # it was silent for a session: a crashed client
        elif op == "grow":
            name = "ab"[arg]
            topic_id, count = h.topics[name]
            h.topics[name] = (topic_id, count + 1)
        assert_disjoint(self.live())
        check_server(h)


@given(operations)
@settings(max_examples=300, deadline=None)
def test_no_partition_is_held_twice_and_the_group_converges(ops: list[tuple[str, int]]) -> None:
    sim = Simulation()
    for op, arg in ops:
        sim.step(op, arg)
    for i in range(N_CLIENTS):
        if sim.clients[i] is None:
            sim.beat(i)
    for _ in range(6):
        for i in range(N_CLIENTS):
            sim.step("beat", i)
    live = sim.live()
    assert len(live) == N_CLIENTS
    assert sim.h.coordinator.state(GROUP) is ConsumerGroupState.STABLE
    group = sim.h.coordinator._groups[GROUP]
    held = set().union(*(c.held for c in live))
    subscribed = {n for c in range(N_CLIENTS) for n in sim.topics[c]}
    wanted = {(sim.h.topics[n][0], p) for n in subscribed for p in range(sim.h.topics[n][1])}
    assert held == wanted
    for c in live:
        assert c.held == partitions_of(group.target[c.member_id])
        assert c.epoch == group.assignment_epoch
