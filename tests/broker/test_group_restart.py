"""Classic groups across a restart of the file engine: members carry on with their generation, a generation is stored
before its members hear of it, Empty groups come back only with committed offsets, deleted groups stay deleted, and
the compacted offsets log keeps each group's latest record. The requests go through the broker's group service, as the
wire handlers send them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import kafkalite
from kafkalite.broker import OffsetManager
from kafkalite.errors import StorageError
from kafkalite.groups import JoinResult, LeavingMember, StoredGroup

from .harness import BrokerFactory

GROUP = "billing"
TOPIC = "orders"
PROTOCOLS = [("range", b"subscription")]


@pytest.fixture
async def files(tmp_path: Path) -> AsyncIterator[BrokerFactory]:
    factory = BrokerFactory("file", tmp_path)
    yield factory
    await factory.close_all()


async def join(broker: kafkalite.Broker, member_id: str = "", **request: Any) -> JoinResult:
    settings: dict[str, Any] = {
        "protocol_type": "consumer",
        "protocols": PROTOCOLS,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "client_id": "app",
    }
    return await broker.groups.join(GROUP, member_id, **{**settings, **request})


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
            joined = await broker.groups.join(
                group,
                "",
                protocol_type="consumer",
                protocols=PROTOCOLS,
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
            )
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
        joined = await broker.groups.join(
            "kept", "", protocol_type="consumer", protocols=PROTOCOLS, session_timeout_ms=10_000, rebalance_timeout_ms=1
        )
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
    async with files(**settings) as broker:
        assert broker.groups.describe(GROUP).generation_id == generation
        assert broker.groups.heartbeat(GROUP, member, generation).error_code == 0


async def test_a_failed_store_is_logged_and_the_members_still_get_their_replies(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def refuse(self: OffsetManager, entries: Any) -> None:
        raise StorageError("No space left on device")

    async with files() as broker:
        monkeypatch.setattr(OffsetManager, "store_groups", refuse)
        with caplog.at_level(logging.ERROR, logger="kafkalite.groups"):
            _, follower = await stable_pair(broker)
        assert broker.groups.describe(GROUP).state == "Stable"
        assert broker.groups.heartbeat(GROUP, follower.member_id, follower.generation_id).error_code == 0
        [line] = [r.getMessage() for r in caplog.records if r.name == "kafkalite.groups"]
        assert "Could not store 1 classic groups (No space left on device)" in line
        monkeypatch.undo()
    async with files() as broker:
        assert broker.groups.describe(GROUP).state == "Dead"  # nothing was stored: the members will rejoin


async def test_replies_wait_for_a_group_write_already_under_way(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply completed while a group's record is being written goes out after that write, never before it."""
    gate = asyncio.Event()
    store = OffsetManager.store_groups

    async def slow(self: OffsetManager, entries: Any) -> None:
        await gate.wait()
        await store(self, entries)

    async with files() as broker:
        first = await join(broker)  # GROUP, generation 1
        monkeypatch.setattr(OffsetManager, "store_groups", slow)
        leader_sync = asyncio.create_task(
            broker.groups.sync(GROUP, first.member_id, 1, assignments={first.member_id: b"a"})
        )
        await asyncio.sleep(0.01)
        other = broker.groups.join(
            "other",
            "",
            protocol_type="consumer",
            protocols=PROTOCOLS,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=1,
        )
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
