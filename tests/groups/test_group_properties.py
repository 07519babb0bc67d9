"""Random lives of a group (joins, leaves, crashes, time) driven by well-behaved clients: at every step no partition
has two owners in the current generation, and members of older generations can neither heartbeat nor commit."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.groups import (
    ASSIGNORS,
    Assignment,
    ErrorCode,
    GroupCoordinator,
    JoinPending,
    JoinResult,
    LeavingMember,
    MemberSubscription,
    Subscription,
    SyncPending,
    SyncResult,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

from .harness import make_config

GROUP = "g"
TOPICS = {"t": 5, "u": 2}
SESSION, REBALANCE = 10_000, 20_000


@dataclass
class Client:
    name: str
    protocol: str
    alive: bool = True
    member_id: str = ""
    generation: int = -1
    synced_generation: int = -1
    partitions: tuple[tuple[str, int], ...] = ()
    ticket: int | None = None
    needs_join: bool = True
    join: JoinResult | None = field(default=None, repr=False)


class World:
    def __init__(self) -> None:
        self.coordinator = GroupCoordinator(make_config(min_session_timeout_ms=1))
        self.now = 0
        self.clients: list[Client] = []

    def metadata(self, client: Client) -> bytes:
        sub = Subscription(tuple(TOPICS), None, client.partitions, client.synced_generation)
        return encode_subscription(sub, 2)

    def act(self, client: Client) -> None:
        """One step of a client that follows the protocol."""
        c = self.coordinator
        if client.needs_join:
            result = c.join(
                GROUP,
                client.member_id,
                now_ms=self.now,
                protocol_type="consumer",
                protocols=[(client.protocol, self.metadata(client))],
                session_timeout_ms=SESSION,
                rebalance_timeout_ms=REBALANCE,
                client_id=client.name,
            )
            client.needs_join = False
            self.on_reply(client, result)
        elif client.join is not None:
            join, client.join = client.join, None
            assignments = None
            if join.leader_id == client.member_id:
                members = {
                    m.member_id: MemberSubscription.from_subscription(decode_subscription(m.metadata))
                    for m in join.members
                }
                plan = ASSIGNORS[join.protocol_name or ""](members, TOPICS)
                assignments = {m: encode_assignment(Assignment(tuple(tps))) for m, tps in plan.items()}
            result = c.sync(GROUP, client.member_id, join.generation_id, now_ms=self.now, assignments=assignments)
            self.on_reply(client, result)
        else:
            error = c.heartbeat(GROUP, client.member_id, client.generation, now_ms=self.now).error_code
            self.on_error(client, error)
        self.dispatch()

    def on_reply(self, client: Client, result: JoinResult | JoinPending | SyncResult | SyncPending) -> None:
        if isinstance(result, JoinPending | SyncPending):
            client.ticket = result.ticket
        elif isinstance(result, JoinResult):
            if result.error_code == ErrorCode.NONE:
                client.member_id, client.generation, client.join = result.member_id, result.generation_id, result
            else:
                self.on_error(client, result.error_code)
        elif result.error_code == ErrorCode.NONE:
            client.synced_generation = client.generation
            client.partitions = decode_assignment(result.assignment).partitions
        else:
            self.on_error(client, result.error_code)

    def on_error(self, client: Client, error: int) -> None:
        if error == ErrorCode.UNKNOWN_MEMBER_ID:
            client.member_id, client.generation = "", -1
        if error != ErrorCode.NONE:
            client.needs_join = True

    def dispatch(self) -> None:
        for ticket, result in self.coordinator.take_completed():
            owner = next((c for c in self.clients if c.ticket == ticket), None)
            if owner is not None:
                owner.ticket = None
                if owner.alive:
                    self.on_reply(owner, result)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.coordinator.tick(self.now)
        self.dispatch()

    def check(self) -> None:
        description = self.coordinator.describe(GROUP)
        members = {m.member_id for m in description.members}
        current = [
            c for c in self.clients if c.member_id in members and c.synced_generation == description.generation_id
        ]
        owners = Counter(tp for c in current for tp in c.partitions)
        assert all(n == 1 for n in owners.values()), owners
        for client in self.clients:
            if client.synced_generation != -1 and client.synced_generation != description.generation_id:
                commit = self.coordinator.validate_offset_commit(
                    GROUP, client.member_id, client.synced_generation, now_ms=self.now
                )
                beat = self.coordinator.heartbeat(GROUP, client.member_id, client.synced_generation, now_ms=self.now)
                assert commit != ErrorCode.NONE
                assert beat.error_code != ErrorCode.NONE

    def settle(self) -> None:
        """Let live clients run (time moving in steps shorter than a session) until the group is Stable."""
        for _ in range(400):
            for client in self.clients:
                if client.alive and client.ticket is None:
                    self.act(client)
                    self.check()
            description = self.coordinator.describe(GROUP)
            live = [c for c in self.clients if c.alive]
            members = {m.member_id for m in description.members}
            if (
                description.state in ("Stable", "Empty", "Dead")
                and members == {c.member_id for c in live}
                and all(c.synced_generation == description.generation_id and c.ticket is None for c in live)
            ):
                return
            self.advance(1000)
            self.check()
        raise AssertionError("the group did not settle")


events = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.none()),
        st.tuples(st.just("leave"), st.integers(0, 9)),
        st.tuples(st.just("crash"), st.integers(0, 9)),
        st.tuples(st.just("wait"), st.integers(0, 30_000)),
    ),
    min_size=1,
    max_size=15,
)


@settings(max_examples=100, deadline=None)
@given(protocol=st.sampled_from(sorted(ASSIGNORS)), script=events)
def test_one_owner_per_partition_per_generation(protocol: str, script: list[tuple[str, object]]) -> None:
    world = World()
    for kind, arg in script:
        live = [c for c in world.clients if c.alive]
        if kind == "join":
            world.clients.append(Client(f"c{len(world.clients)}", protocol))
        elif kind in ("leave", "crash") and live:
            client = live[int(arg) % len(live)]  # type: ignore[call-overload]
            client.alive = False
            if kind == "leave" and client.member_id:
                world.coordinator.leave(GROUP, [LeavingMember(client.member_id)], now_ms=world.now)
                world.dispatch()
        elif kind == "wait":
            for client in live:
                if client.ticket is None:
                    world.act(client)
            world.advance(int(arg))  # type: ignore[call-overload]
        world.check()
        world.settle()
        world.check()
    live = [c for c in world.clients if c.alive]
    description = world.coordinator.describe(GROUP)
    if live:
        owned = Counter(tp for c in live for tp in c.partitions)
        assert set(owned) == {(t, p) for t, n in TOPICS.items() for p in range(n)}
        assert set(owned.values()) == {1}
        assert description.state == "Stable"
