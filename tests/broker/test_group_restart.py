"""Classic groups across a restart of the file engine: members carry on with their generation, a generation is stored
before its members hear of it, Empty groups come back only with committed offsets, deleted groups stay deleted, and
the compacted offsets log keeps each group's latest record. The requests go through the broker's group service, as the
wire handlers send them."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import kafkalite
from kafkalite.broker import OFFSETS_TOPIC, OffsetManager
from kafkalite.broker.log_reader import scan_records
from kafkalite.groups import ErrorCode, JoinResult, LeavingMember, StoredGroup

from .harness import BrokerFactory, hold_back

GROUP = "billing"
TOPIC = "orders"
PROTOCOLS = [("range", b"subscription")]


async def join(broker: kafkalite.Broker, member_id: str = "", *, group: str = GROUP, **request: Any) -> JoinResult:
    settings: dict[str, Any] = {
        "protocol_type": "consumer",
        "protocols": PROTOCOLS,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "client_id": "app",
    }
    return await broker.groups.join(group, member_id, **{**settings, **request})


async def joined_pair(broker: kafkalite.Broker) -> tuple[JoinResult, JoinResult]:
    """Two members of GROUP in one generation, not synced yet; the leader first."""
    first = await join(broker)  # alone: generation 1 at once
    second = asyncio.create_task(join(broker))  # a rebalance, which waits for the first member to rejoin
    await asyncio.sleep(0)
    leader = await join(broker, first.member_id)
    follower = await second
    assert (leader.generation_id, follower.generation_id, leader.leader_id) == (2, 2, leader.member_id)
    return leader, follower


async def stable_pair(broker: kafkalite.Broker) -> tuple[JoinResult, JoinResult]:
    """Two members of GROUP in one generation, both synced; the leader first."""
    leader, follower = await joined_pair(broker)
    assignments = {leader.member_id: b"for-leader", follower.member_id: b"for-follower"}
    await asyncio.gather(
        broker.groups.sync(GROUP, follower.member_id, follower.generation_id),
        broker.groups.sync(GROUP, leader.member_id, leader.generation_id, assignments=assignments),
    )
    return leader, follower


async def test_members_carry_on_with_their_generation_after_a_restart(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=2)
        leader, follower = await stable_pair(broker)
        generation = leader.generation_id
        assert await broker.groups.commit_offsets(GROUP, follower.member_id, generation, [(TOPIC, 1, 5, "", -1)]) == 0

    async with files() as broker:
        described = broker.groups.describe(GROUP)
        assert (described.state, described.generation_id) == ("Stable", generation)
        assert {m.member_id: m.assignment for m in described.members} == {
            leader.member_id: b"for-leader",
            follower.member_id: b"for-follower",
        }
        assert broker.groups.heartbeat(GROUP, leader.member_id, generation).error_code == 0
        assert broker.groups.heartbeat(GROUP, follower.member_id, generation).error_code == 0
        commit = [(TOPIC, 0, 3, "", -1)]
        assert await broker.groups.commit_offsets(GROUP, leader.member_id, generation, commit) == 0
        assert broker.offsets.fetch(GROUP, TOPIC, 1) is not None


async def test_a_generation_is_stored_before_any_member_hears_of_it(files: BrokerFactory) -> None:
    async with files() as broker:
        leader, follower = await joined_pair(broker)
        generation = leader.generation_id
        seen: dict[str, StoredGroup | None] = {}

        async def sync(member: JoinResult, **request: Any) -> None:
            result = await broker.groups.sync(GROUP, member.member_id, generation, **request)
            assert result.error_code == 0
            seen[member.member_id] = broker.offsets.stored_groups().get(GROUP)

        await asyncio.gather(
            sync(follower),
            sync(leader, assignments={leader.member_id: b"a", follower.member_id: b"b"}),
        )
        for member in (leader, follower):
            stored = seen[member.member_id]
            assert stored is not None, member.member_id
            assert stored.generation_id == generation, member.member_id


async def test_an_empty_group_comes_back_only_with_committed_offsets(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC)
        for group in ("kept", "forgotten"):
            joined = await join(broker, group=group)
            await broker.groups.sync(group, joined.member_id, joined.generation_id, assignments={})
            if group == "kept":
                commit = [(TOPIC, 0, 1, "", -1)]
                assert await broker.groups.commit_offsets(group, joined.member_id, joined.generation_id, commit) == 0
            broker.groups.leave(group, [LeavingMember(joined.member_id)])
        await broker.groups.wait_stored()
        assert {g: s.generation_id for g, s in broker.offsets.stored_groups().items()} == {"kept": 2, "forgotten": 2}

    async with files() as broker:
        described = broker.groups.describe("kept")
        assert (described.state, described.generation_id, described.protocol_type) == ("Empty", 2, "consumer")
        assert [g.group_id for g in broker.groups.list_groups()] == ["kept"]
        await broker.groups.wait_stored()  # the forgotten group's tombstone
        assert set(broker.offsets.stored_groups()) == {"kept"}
        joined = await join(broker, group="kept")
        assert joined.generation_id == 3  # the generation goes on from where it was

    async with files() as broker:
        assert broker.groups.describe("forgotten").state == "Dead"


async def test_a_deleted_group_stays_deleted(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC)
        leader, _ = await stable_pair(broker)
        assert (
            await broker.groups.commit_offsets(GROUP, leader.member_id, leader.generation_id, [(TOPIC, 0, 1, "", -1)])
            == 0
        )
    async with files() as broker:
        members = [LeavingMember(m.member_id) for m in broker.groups.describe(GROUP).members]
        broker.groups.leave(GROUP, members)
        assert await broker.groups.delete_group(GROUP) == 0
        assert GROUP not in broker.offsets.stored_groups()
    async with files() as broker:
        assert broker.groups.describe(GROUP).state == "Dead"
        assert broker.groups.list_groups() == []


async def test_the_compacted_offsets_log_keeps_each_groups_latest_generation(files: BrokerFactory) -> None:
    settings = {"offsets_segment_bytes": 1024, "log_cleaner_enable": False}
    async with files(**settings) as broker:
        member = ""
        for _ in range(30):  # a rebalance each time: the leader of a Stable group rejoining
            joined = await join(broker, member)
            member = joined.member_id
            sync = await broker.groups.sync(GROUP, member, joined.generation_id, assignments={member: b"x"})
            assert sync.error_code == 0
        generation = joined.generation_id
        assert broker.cleaner is not None
        for _ in range(2):
            await broker.cleaner.clean_once()
        assert broker.cleaner.cleanings >= 1
        log = broker.partition(OFFSETS_TOPIC, 0).log
        kept = sum(1 for _ in scan_records(log, log.log_start_offset))
        assert kept < 10, f"{kept} records left of 30 generations of one group"
    async with files(**settings) as broker:
        assert broker.groups.describe(GROUP).generation_id == generation
        assert broker.groups.heartbeat(GROUP, member, generation).error_code == 0


BIG = 1_100_000  # a subscription whose group record is larger than __consumer_offsets' max.message.bytes (1 MiB)


async def synced_alone(broker: kafkalite.Broker, group: str, subscription: bytes = b"s", **request: Any) -> JoinResult:
    joined = await join(broker, group=group, protocols=[("range", subscription)], **request)
    assert joined.error_code == 0
    synced = await broker.groups.sync(
        group, joined.member_id, joined.generation_id, assignments={joined.member_id: b"a"}
    )
    assert synced.error_code == 0
    return joined


async def test_a_group_that_cannot_be_stored_fails_alone_and_its_members_still_get_their_replies(
    files: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Two groups' records written in one go: the one too large for the topic is refused and logged, the other is
    stored; both groups' members get their answers and carry on."""
    async with files() as broker:
        with caplog.at_level(logging.ERROR, logger="kafkalite.groups"):
            big, small = await asyncio.gather(synced_alone(broker, "big", b"x" * BIG), synced_alone(broker, "small"))
        assert set(broker.offsets.stored_groups()) == {"small"}
        assert broker.groups.heartbeat("big", big.member_id, big.generation_id).error_code == 0
        [line] = [r.getMessage() for r in caplog.records if r.name == "kafkalite.groups"]
        assert line.startswith("Could not store classic group big (batch of ")
        assert "exceeds max.message.bytes" in line
    async with files() as broker:
        assert broker.groups.describe("big").state == "Dead"  # nothing was stored: its members will rejoin
        assert broker.groups.heartbeat("small", small.member_id, small.generation_id).error_code == 0


async def test_a_record_kafkas_schema_cannot_hold_fails_alone(files: BrokerFactory) -> None:
    """An instance id longer than a Kafka string (32,767 bytes) cannot be encoded: that group is not stored, the
    other one is, and the broker closes cleanly."""
    async with files() as broker:
        await asyncio.gather(
            synced_alone(broker, "long", group_instance_id="i" * 40_000), synced_alone(broker, "short")
        )
        assert set(broker.offsets.stored_groups()) == {"short"}


async def test_a_static_takeover_that_cannot_be_stored_is_undone(files: BrokerFactory) -> None:
    """A static member coming back with a new member id takes its instance over without a rebalance; when that
    record cannot be written the takeover is undone, as in Kafka, and the JoinGroup fails with a retriable error:
    a restart would otherwise fence the new member id."""
    async with files() as broker:
        first = await synced_alone(broker, GROUP, group_instance_id="i-1")
        # The same protocol: a takeover, with a record too large.
        again = await join(broker, protocols=[("range", b"x" * BIG)], group_instance_id="i-1")
        assert (again.error_code, again.member_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
        [member] = broker.groups.describe(GROUP).members
        assert member.member_id == first.member_id
        heartbeat = broker.groups.heartbeat(GROUP, first.member_id, first.generation_id, group_instance_id="i-1")
        assert heartbeat.error_code == 0
        retried = await join(broker, group=GROUP, group_instance_id="i-1")
        assert (retried.error_code, retried.generation_id) == (0, first.generation_id)
    async with files() as broker:
        [member] = broker.groups.describe(GROUP).members
        assert member.member_id == retried.member_id


async def test_the_broker_closes_cleanly_while_a_group_write_fails(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Whatever a group write raises, the replies go out, the error is logged and the broker's close completes."""

    async def broken(self: OffsetManager, entries: Any) -> dict[str, Exception]:
        await asyncio.sleep(0.05)
        raise OSError("a bug, not a disk")

    broker = files()
    await broker.start()
    first = await join(broker)
    monkeypatch.setattr(OffsetManager, "store_groups", broken)
    synced = asyncio.create_task(
        broker.groups.sync(GROUP, first.member_id, first.generation_id, assignments={first.member_id: b"a"})
    )
    await asyncio.sleep(0.01)
    with caplog.at_level(logging.ERROR):
        await broker.close()
    assert (await synced).error_code == 0
    assert "Storing 1 classic groups failed" in caplog.text
    assert not broker.running


async def test_deleting_a_group_keeps_offsets_committed_while_its_tombstone_is_written(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC)
        joined = await synced_alone(broker, GROUP)
        assert (
            await broker.groups.commit_offsets(GROUP, joined.member_id, joined.generation_id, [(TOPIC, 0, 7, "", -1)])
            == 0
        )
        broker.groups.leave(GROUP, [LeavingMember(joined.member_id)])
        await broker.groups.wait_stored()
        gate = hold_back(monkeypatch, OffsetManager, "store_groups")
        deleting = asyncio.create_task(broker.groups.delete_group(GROUP))
        await asyncio.sleep(0.01)
        # A standalone commit after the delete: it belongs to the group that exists from now on.
        assert await broker.groups.commit_offsets(GROUP, "", -1, [(TOPIC, 0, 42, "", -1)]) == 0
        gate.set()
        assert await deleting == 0
        committed = broker.offsets.fetch(GROUP, TOPIC, 0)
        assert committed is not None
        assert committed.offset == 42


async def test_replies_wait_for_a_group_write_already_under_way(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply completed while a group's record is being written goes out after that write, never before it."""
    async with files() as broker:
        first = await join(broker)  # GROUP, generation 1
        gate = hold_back(monkeypatch, OffsetManager, "store_groups")
        leader_sync = asyncio.create_task(
            broker.groups.sync(GROUP, first.member_id, 1, assignments={first.member_id: b"a"})
        )
        await asyncio.sleep(0.01)
        other = join(broker, group="other")
        alone = asyncio.create_task(other)  # its join completes at once, its reply waits for GROUP's write
        await asyncio.sleep(0.05)
        try:
            assert not leader_sync.done()
            assert not alone.done()
        finally:
            gate.set()
        assert (await leader_sync).error_code == 0
        assert (await alone).generation_id == 1
        assert broker.offsets.stored_groups()[GROUP].generation_id == 1


async def test_a_takeover_is_undone_only_by_the_failure_of_the_write_that_carries_it(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writes of one group in a row: the generation's (written) and then a static takeover's (too large). Only
    the second one's failure undoes the takeover, and a restart finds what the broker answered."""
    async with files() as broker:
        first = await join(broker, group_instance_id="i-1")
        gate = hold_back(monkeypatch, OffsetManager, "store_groups")
        sync = broker.groups.sync(GROUP, first.member_id, first.generation_id, assignments={first.member_id: b"a"})
        synced = asyncio.create_task(sync)
        await asyncio.sleep(0.01)  # the generation's write is under way (held)
        takeover = asyncio.create_task(join(broker, protocols=[("range", b"x" * BIG)], group_instance_id="i-1"))
        await asyncio.sleep(0.01)  # queued behind it
        gate.set()
        assert (await synced).error_code == 0
        again = await takeover
        assert again.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert [m.member_id for m in broker.groups.describe(GROUP).members] == [first.member_id]
    async with files() as broker:
        assert [m.member_id for m in broker.groups.describe(GROUP).members] == [first.member_id]
        heartbeat = broker.groups.heartbeat(GROUP, first.member_id, first.generation_id, group_instance_id="i-1")
        assert heartbeat.error_code == 0


async def test_a_broker_served_for_a_while_still_stores_its_groups_afterwards(files: BrokerFactory) -> None:
    """An embedded broker outlives the block that served it on a socket (the testing guide's fixture does this)."""
    from kafkalite.server.inprocess import serve

    async with files() as broker:
        async with serve(broker):
            pass
        joined = await synced_alone(broker, GROUP)
        assert set(broker.offsets.stored_groups()) == {GROUP}
    async with files() as broker:
        assert broker.groups.heartbeat(GROUP, joined.member_id, joined.generation_id).error_code == 0


async def test_a_takeover_while_the_broker_closes_is_undone_not_answered(files: BrokerFactory) -> None:
    """Once the broker stops storing (it is closing), a static takeover cannot be written: it is undone and its
    JoinGroup answered with a retriable error, never with a member id a restart would fence."""
    async with files() as broker:
        first = await synced_alone(broker, GROUP, group_instance_id="i-1")
        await broker.groups.stop_storing()
        again = await join(broker, group_instance_id="i-1", client_id="restarted")
        assert (again.error_code, again.member_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
    async with files() as broker:
        heartbeat = broker.groups.heartbeat(GROUP, first.member_id, first.generation_id, group_instance_id="i-1")
        assert heartbeat.error_code == 0
