"""Consumer groups: one owner per partition per generation, rebalances that lose nothing, hot standbys, independent
groups, replay with `seek`, and consumption that deletes nothing. Every test runs on both storage engines."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict

import pytest

import kafkalite
from broker.harness import TIMEOUT_S, consume, consumer, wait_for
from kafkalite.errors import OffsetOutOfRangeError, UnknownPartitionError

TOPIC = "orders"
TP = tuple[str, int]


class Member:
    """One consumer of a group running `run(handler)` in a task, recording every (partition, offset) it handles."""

    def __init__(self, broker: kafkalite.Broker, group: str, name: str) -> None:
        self.consumer = consumer(broker, TOPIC, group, name=name)
        self.name = name
        self.handled: list[tuple[int, int]] = []
        self.killed = False
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> Member:
        await self.consumer.start()
        self.task = asyncio.create_task(self.consumer.run(self._handle, max_retries=0))
        return self

    def _handle(self, message: kafkalite.Message) -> None:
        self.handled.append((message.partition, message.offset))

    async def leave(self) -> None:
        """Graceful: stop after the message in hand, commit, leave the group (an immediate rebalance)."""
        assert self.task is not None
        self.consumer.stop()
        async with asyncio.timeout(TIMEOUT_S):
            await self.task
        await self.consumer.close()

    async def kill(self) -> None:
        """A crash: its tasks stop, nothing is committed and no LeaveGroup is sent; only the session timeout can
        remove it. (The consumer's heartbeat task is private API: there is no public way to crash a consumer.)"""
        assert self.task is not None
        self.killed = True
        tasks = [self.task, self.consumer._heartbeat_task]
        for task in tasks:
            assert task is not None
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class OwnershipWatch:
    """Samples every member's (generation, assignment) each millisecond and keeps what each generation handed out."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members
        self.by_generation: dict[int, dict[str, frozenset[TP]]] = defaultdict(dict)
        self._task = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            for member in self.members:
                c = member.consumer
                if not member.killed and c.generation_id >= 0:
                    self.by_generation[c.generation_id][member.name] = frozenset(c.assignment())
            await asyncio.sleep(0.001)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    def assert_one_owner_per_partition(self) -> None:
        for generation, owned in self.by_generation.items():
            seen: Counter[TP] = Counter(tp for parts in owned.values() for tp in parts)
            doubled = [tp for tp, n in seen.items() if n > 1]
            assert not doubled, f"generation {generation}: {doubled} owned twice: {owned}"


def live(members: list[Member]) -> list[Member]:
    return [m for m in members if not m.killed and not m.consumer._closed]


async def wait_stable(members: list[Member], partitions: int) -> None:
    """Wait until the live members share one generation and their assignments partition the topic exactly."""

    def stable() -> bool:
        current = live(members)
        if len({m.consumer.generation_id for m in current}) != 1:
            return False
        owned = [tp for m in current for tp in m.consumer.assignment()]
        return sorted(owned) == [(TOPIC, p) for p in range(partitions)]

    await wait_for(stable, what="a stable group")


async def produce(broker: kafkalite.Broker, count: int, *, pause: float = 0.0, start: int = 0) -> set[tuple[int, int]]:
    produced: set[tuple[int, int]] = set()
    async with broker.producer() as producer:
        for i in range(start, start + count):
            meta = await producer.send(TOPIC, b"m-%d" % i, key=b"key-%d" % (i % 17))
            produced.add((meta.partition, meta.offset))
            if pause:
                await asyncio.sleep(pause)
    return produced


def all_handled(members: list[Member]) -> Counter[tuple[int, int]]:
    return Counter(po for m in members for po in m.handled)


async def test_assignments_are_disjoint_and_cover_every_partition(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=6)
    members: list[Member] = []
    watch = OwnershipWatch(members)
    for number in range(4):
        members.append(await Member(broker, "billing", f"c{number}").start())
        await wait_stable(members, 6)
        assert all(m.consumer.assignment() for m in live(members)), "with 6 partitions nobody idles"
    await members[1].leave()
    await wait_stable(members, 6)
    await members[0].leave()
    await wait_stable(members, 6)
    await watch.stop()
    watch.assert_one_owner_per_partition()
    assert min(m.consumer.generation_id for m in live(members)) >= 6  # every join and leave made a new generation
    for member in live(members):
        await member.consumer.close()


async def test_join_leave_and_timeout_rebalances_lose_nothing_and_never_hand_a_message_to_two_live_owners(
    broker: kafkalite.Broker,
) -> None:
    """What is asserted, precisely, while 300 records are produced during joins, a leave and a crash:

    - the set of (partition, offset) handled by the group equals the set produced (nothing lost);
    - no (partition, offset) is handled twice by members that were never killed (no double delivery between live
      owners, also not around the graceful join and leave rebalances);
    - a record handled twice was handled once by the killed member, in a partition it owned when it died, at or after
      that partition's committed offset at that moment: the killed member's uncommitted work, legitimately
      redelivered to the next owner once the session timeout removed it;
    - one owner per partition in every generation observed.
    """
    # Bounded as a whole, below pytest-timeout: if a join, leave or close ever hangs, the TimeoutError's traceback
    # names the await that was stuck (pytest-timeout shows only the event loop's select). One hang was seen in
    # a full suite run (2026-12-01) and not reproduced in 20 runs of this test alone.
    async with asyncio.timeout(4 * TIMEOUT_S + 120):
        await _rebalance_scenario(broker)


async def _rebalance_scenario(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=4)
    members = [await Member(broker, "billing", "c0").start()]
    watch = OwnershipWatch(members)
    producing = asyncio.create_task(produce(broker, 300, pause=0.005))

    await wait_for(lambda: len(members[0].handled) > 20, what="c0 consuming")
    members.append(await Member(broker, "billing", "c1").start())
    members.append(await Member(broker, "billing", "c2").start())
    await wait_stable(members, 4)
    await wait_for(lambda: all(m.handled for m in members), what="every member consuming")
    await members[1].leave()
    await wait_stable(members, 4)

    victim = members[2]
    await wait_for(lambda: len(victim.handled) > 10, what="the victim consuming")
    owned_at_death = {p for _, p in victim.consumer.assignment()}
    await victim.kill()
    committed_at_death = {}
    for p in owned_at_death:
        found = broker.offsets.fetch("billing", TOPIC, p)
        committed_at_death[p] = found.offset if found else 0
    members.append(await Member(broker, "billing", "c3").start())

    async with asyncio.timeout(TIMEOUT_S):
        produced = await producing
    await wait_for(lambda: set(all_handled(members)) >= produced, what="every record handled")
    await wait_stable(members, 4)
    await watch.stop()

    handled = all_handled(members)
    assert set(handled) == produced
    survivors = Counter(po for m in members if not m.killed for po in m.handled)
    assert [po for po, n in survivors.items() if n > 1] == []
    for (p, o), n in handled.items():
        if n > 1:
            assert n == 2, (p, o)
            assert (p, o) in victim.handled
            assert p in owned_at_death, (p, o)
            assert o >= committed_at_death[p], (p, o, committed_at_death)
    watch.assert_one_owner_per_partition()
    for member in live(members):
        await member.consumer.close()


async def test_session_timeout_removes_a_crashed_consumer_and_its_partitions_move(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    members = [await Member(broker, "g", "a").start(), await Member(broker, "g", "b").start()]
    await wait_stable(members, 2)
    crashed, survivor = (members[0], members[1])
    await crashed.kill()
    await wait_for(lambda: len(survivor.consumer.assignment()) == 2, what="the survivor taking over")
    produced = await produce(broker, 20)
    await wait_for(lambda: set(survivor.handled) >= produced, what="the survivor reading both partitions")
    await survivor.consumer.close()


async def test_extra_consumers_are_hot_standbys_that_take_over(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    members = [await Member(broker, "g", f"c{i}").start() for i in range(4)]
    await wait_stable(members, 2)
    idle = [m for m in members if not m.consumer.assignment()]
    owners = [m for m in members if m.consumer.assignment()]
    assert len(idle) == 2
    assert len(owners) == 2
    first = await produce(broker, 20)
    await wait_for(lambda: set(all_handled(members)) >= first, what="the owners reading")
    assert all(not m.handled for m in idle), "a standby must not read"

    await owners[0].leave()
    await wait_stable(members, 2)
    assert sum(1 for m in idle if m.consumer.assignment()) == 1, "exactly one standby took the free partition"
    second = await produce(broker, 20, start=20)
    await wait_for(lambda: set(all_handled(members)) >= first | second, what="everything read")
    assert max(all_handled(members).values()) == 1
    assert any(m.handled for m in idle)
    for member in live(members):
        await member.consumer.close()


async def test_two_groups_read_independently_with_their_own_offsets(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    produced = await produce(broker, 30)
    async with consumer(broker, TOPIC, "billing", enable_auto_commit=False) as billing:
        got = await consume(billing, 30)
        assert {(m.partition, m.offset) for m in got} == produced
        await billing.commit()
    async with consumer(broker, TOPIC, "fulfillment", enable_auto_commit=False) as fulfillment:
        half = await consume(fulfillment, 10)
        await fulfillment.commit()
    committed_billing = {p: broker.offsets.fetch("billing", TOPIC, p) for p in range(2)}
    assert sum(c.offset for c in committed_billing.values() if c) == 30
    fulfillment_total = sum(c.offset for p in range(2) if (c := broker.offsets.fetch("fulfillment", TOPIC, p)))
    assert fulfillment_total == 10
    async with consumer(broker, TOPIC, "fulfillment") as again:
        rest = await consume(again, 20)
    assert {(m.partition, m.offset) for m in half + rest} == produced
    assert len(half + rest) == 30


async def test_a_new_consumer_of_a_group_resumes_exactly_after_the_committed_offset(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    await produce(broker, 10)
    async with consumer(broker, TOPIC, "g", enable_auto_commit=False) as first:
        got = await consume(first, 4)
        await first.commit()
        await consume(first, 3)  # read but not committed: the group goes back to offset 4
    async with consumer(broker, TOPIC, "g") as second:
        rest = await consume(second, 6)
    assert [m.offset for m in got] == [0, 1, 2, 3]
    assert [m.offset for m in rest] == [4, 5, 6, 7, 8, 9]


async def test_seek_replays_from_any_offset(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    await produce(broker, 10)
    async with consumer(broker, TOPIC, "g") as c:
        first = await consume(c, 10)
        for start in (0, 7, 3, 10):
            await c.seek(TOPIC, 0, start)
            again = await consume(c, 10 - start) if start < 10 else []
            assert [m.offset for m in again] == list(range(start, 10))
            assert [m.value for m in again] == [m.value for m in first[start:]]
        with pytest.raises(OffsetOutOfRangeError):
            await c.seek(TOPIC, 0, -1)
        with pytest.raises(OffsetOutOfRangeError):
            await c.seek(TOPIC, 0, 11)
        with pytest.raises(UnknownPartitionError):
            await c.seek(TOPIC, 1, 0)


async def test_consumption_deletes_nothing(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=3)
    produced = await produce(broker, 30)
    async with consumer(broker, TOPIC, "first") as c:
        await consume(c, 30)
        await c.commit()
    for p in range(3):
        assert broker.partition(TOPIC, p).log_start_offset == 0
    async with consumer(broker, TOPIC, "second") as c:
        again = await consume(c, 30)
    async with consumer(broker, TOPIC, None) as groupless:
        third = await consume(groupless, 30)
    assert {(m.partition, m.offset) for m in again} == produced == {(m.partition, m.offset) for m in third}


async def test_consumer_without_group_reads_every_partition_and_cannot_commit(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=3)
    async with consumer(broker, TOPIC, None) as c:
        assert c.assignment() == {(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)}
        with pytest.raises(kafkalite.errors.GroupError):
            await c.commit()


async def test_auto_offset_reset_latest_skips_what_was_there(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    await produce(broker, 5)
    async with consumer(broker, TOPIC, "late", auto_offset_reset="latest") as c:
        assert await c.getmany(timeout=0.05) == []
        await produce(broker, 2, start=5)
        assert [m.offset for m in await consume(c, 2)] == [5, 6]


async def test_async_for_yields_messages_with_all_fields(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with broker.producer() as producer:
        sent = await producer.send(TOPIC, b"payload", key=b"user-1", headers=[("source", b"web")], timestamp=1234)
    async with consumer(broker, TOPIC, "g") as c:
        async with asyncio.timeout(TIMEOUT_S):
            message = await anext(aiter(c))
    assert message == kafkalite.Message(TOPIC, 0, sent.offset, b"user-1", b"payload", (("source", b"web"),), 1234)
    assert sent.timestamp == 1234


async def test_a_rebalance_is_not_delayed_by_buffered_messages_of_a_slow_handler(broker: kafkalite.Broker) -> None:
    """A member with a full buffer and a slow handler must rejoin at its next message, not once its buffer is empty:
    otherwise the rebalance timeout expels it while it keeps handling records the new owner also receives."""
    await broker.create_topic(TOPIC, partitions=2)
    produced = await produce(broker, 100)
    handled: dict[str, list[tuple[int, int]]] = {"slow": [], "fast": []}

    def recorder(name: str, pause: float) -> object:
        async def handle(message: kafkalite.Message) -> None:
            handled[name].append((message.partition, message.offset))
            await asyncio.sleep(pause)

        return handle

    slow = consumer(broker, TOPIC, "g", name="slow", session_timeout=0.2)  # ~50 buffered records take 0.5 s
    await slow.start()
    slow_task = asyncio.create_task(slow.run(recorder("slow", 0.01)))  # type: ignore[arg-type]
    await wait_for(lambda: len(handled["slow"]) >= 3, what="the slow member reading")
    fast = consumer(broker, TOPIC, "g", name="fast", session_timeout=0.2)
    await fast.start()
    fast_task = asyncio.create_task(fast.run(recorder("fast", 0)))  # type: ignore[arg-type]
    await wait_for(lambda: set(handled["slow"] + handled["fast"]) >= produced, what="everything handled")
    both = Counter(handled["slow"] + handled["fast"])
    assert [po for po, n in both.items() if n > 1] == []
    assert slow.assignment()
    assert fast.assignment()
    for c, task in ((slow, slow_task), (fast, fast_task)):
        c.stop()
        async with asyncio.timeout(TIMEOUT_S):
            await task
        await c.close()


async def test_a_member_expelled_for_not_polling_rejoins_as_a_new_member(broker: kafkalite.Broker) -> None:
    """c1 does not poll while c2 joins, so the rebalance timeout expels it; its next poll must join again (with a new
    member id) instead of retrying the expired one forever."""
    await broker.create_topic(TOPIC, partitions=2)
    c1 = consumer(broker, TOPIC, "g", name="c1")
    await c1.start()
    expired = c1.member_id
    c2 = consumer(broker, TOPIC, "g", name="c2")
    async with asyncio.timeout(TIMEOUT_S):
        await c2.start()  # completes once the rebalance timeout (0.5 s) removed the silent c1
    assert c2.assignment() == {(TOPIC, 0), (TOPIC, 1)}
    polling = asyncio.create_task(_poll_forever(c2))
    async with asyncio.timeout(TIMEOUT_S):
        while len(c1.assignment()) != 1 or len(c2.assignment()) != 1:
            await c1.getmany(timeout=0.01)
    assert c1.member_id != expired
    polling.cancel()
    await asyncio.gather(polling, return_exceptions=True)
    await c1.close()
    await c2.close()


async def _poll_forever(c: kafkalite.Consumer) -> None:
    while True:
        await c.getmany(timeout=0.01)


async def test_a_group_over_several_topics(broker: kafkalite.Broker) -> None:
    await broker.create_topic("a", partitions=2)
    await broker.create_topic("b", partitions=1)
    async with broker.producer() as producer:
        sent = {(m.topic, m.partition, m.offset) for m in [await producer.send("ab"[i % 2], b"v") for i in range(12)]}
    got: list[kafkalite.Message] = []
    members = [consumer(broker, ["a", "b"], "g", name=f"c{i}") for i in range(2)]
    for c in members:
        await c.start()
    tasks = [asyncio.create_task(c.run(got.append)) for c in members]

    def stable() -> bool:
        owned = sorted(tp for c in members for tp in c.assignment())
        return len({c.generation_id for c in members}) == 1 and owned == [("a", 0), ("a", 1), ("b", 0)]

    await wait_for(lambda: len(got) >= 12 and stable(), what="both topics read by a stable group")
    assert {(m.topic, m.partition, m.offset) for m in got} == sent
    assert len(got) == 12
    assert all(c.assignment() for c in members)
    for c, task in zip(members, tasks, strict=True):
        c.stop()
        async with asyncio.timeout(TIMEOUT_S):
            await task
        await c.close()
