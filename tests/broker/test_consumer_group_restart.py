"""KIP-848 consumer groups across a restart of the file engine: members carry on at their epochs, a heartbeat is
answered once what it changed is written, members that leave and groups that empty leave no record behind, and a
failed write is written again at the group's next change. Heartbeats go through the broker's group service, as the
ConsumerGroupHeartbeat handler sends them."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest

import kafkalite
from kafkalite.broker import OFFSETS_TOPIC, OffsetManager
from kafkalite.broker.consumer_group_records import record_group_id
from kafkalite.errors import StorageError
from kafkalite.groups import HeartbeatRequest
from kafkalite.groups.consumer_coordinator import HeartbeatResult
from kafkalite.protocol.records import RecordToWrite, build_batch

from .harness import BrokerFactory, hold_back

GROUP = "kip848"
TOPIC = "orders"


class Member:
    """A client as librdkafka behaves: it holds what it is given and reports it."""

    def __init__(self, member_id: str) -> None:
        self.member_id, self.epoch = member_id, 0
        self.held: dict[uuid.UUID, tuple[int, ...]] = {}

    async def beat(self, broker: kafkalite.Broker, **fields: Any) -> HeartbeatResult:
        if self.epoch == 0:
            fields = {"rebalance_timeout_ms": 10_000, "subscribed_topic_names": (TOPIC,), "owned": (), **fields}
        else:
            fields = {"owned": tuple(self.held.items()), **fields}
        result = await broker.groups.consumer_heartbeat(HeartbeatRequest(GROUP, self.member_id, self.epoch, **fields))
        if result.error_code == 0:
            self.epoch = result.member_epoch
            if result.assignment is not None:
                self.held = {t: tuple(sorted(ps)) for t, ps in result.assignment.items()}
        return result


async def settled(broker: kafkalite.Broker, members: list[Member]) -> None:
    for _ in range(6):
        for member in members:
            assert (await member.beat(broker)).error_code == 0


def member_ids(broker: kafkalite.Broker) -> list[str]:
    described = broker.groups.consumer_describe(GROUP, {})
    assert described is not None
    return [m.member_id for m in described.members]


def stored_groups(broker: kafkalite.Broker) -> set[str]:
    return {record_group_id(key) for key in broker.offsets.consumer_group_records()}


def snapshot(broker: kafkalite.Broker) -> tuple[int, int, list[tuple[str, int, Any]]]:
    """Group epoch, assignment epoch, and each member's id, epoch and assignment."""
    described = broker.groups.consumer_describe(GROUP, {broker.topic(TOPIC).topic_id: TOPIC})
    assert described is not None
    members = sorted((m.member_id, m.member_epoch, sorted(m.assignment.items())) for m in described.members)
    assert all(assignment for _, _, assignment in members)
    return described.group_epoch, described.assignment_epoch, members


async def test_members_carry_on_at_their_epochs_after_a_restart(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=4)
        members = [Member("m1"), Member("m2")]
        await settled(broker, members)
        before = snapshot(broker)
    async with files() as broker:
        assert snapshot(broker) == before
        for member in members:
            result = await member.beat(broker)
            assert (result.error_code, result.member_epoch) == (0, before[2][0][1])
        assert snapshot(broker) == before  # no new group epoch, nothing moved


async def test_members_that_leave_and_groups_that_empty_leave_no_record(files: BrokerFactory) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=2)
        members = [Member("m1"), Member("m2")]
        await settled(broker, members)
        leave = HeartbeatRequest(GROUP, "m2", -1)
        assert (await broker.groups.consumer_heartbeat(leave)).error_code == 0
        await settled(broker, members[:1])
    async with files() as broker:
        assert member_ids(broker) == ["m1"]
        assert all(b"m2" not in key for key in broker.offsets.consumer_group_records())
        assert (await broker.groups.consumer_heartbeat(HeartbeatRequest(GROUP, "m1", -1))).error_code == 0
    async with files() as broker:  # Empty without committed offsets: forgotten, every record tombstoned
        assert broker.groups.consumer_describe(GROUP, {}) is None
        assert stored_groups(broker) == set()


async def test_a_heartbeat_is_answered_once_its_change_is_written(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=2)
        gate = hold_back(monkeypatch, OffsetManager, "store_records")
        joining = asyncio.create_task(Member("m1").beat(broker))
        await asyncio.sleep(0.05)
        assert not joining.done()
        gate.set()
        assert (await joining).error_code == 0


async def test_a_failed_write_is_written_again_at_the_next_change(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = OffsetManager.store_records
    failures = [StorageError("No space left on device"), StorageError("No space left on device")]

    async def flaky(self: OffsetManager, batches: Any) -> dict[str, Exception]:
        if failures:
            return {group_id: failures.pop() for group_id, _ in batches}
        return await store(self, batches)

    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=2)
        monkeypatch.setattr(OffsetManager, "store_records", flaky)
        member = Member("m1")
        with caplog.at_level(logging.WARNING, logger="kafkalite.groups"):
            assert (await member.beat(broker)).error_code == 0  # answered: the group carries on in memory
            assert (await member.beat(broker)).error_code == 0  # fails again: not logged again
            await settled(broker, [member])  # the next heartbeats write what the failed ones did not
        lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "kafkalite.groups"]
        assert [level for level, _ in lines] == ["ERROR", "WARNING"]
        assert lines[0][1].startswith("Could not store consumer group kip848 (No space left on device)")
        assert lines[1][1] == "Stored consumer group kip848 again"
    async with files() as broker:
        assert (await member.beat(broker)).error_code == 0
        assert member_ids(broker) == ["m1"]


async def test_a_record_that_cannot_be_read_loses_its_group_alone_and_the_broker_starts(
    files: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=2)
        member = Member("m1")
        await settled(broker, [member])
        junk = [RecordToWrite(b"", b"\x00\x03\x00"), RecordToWrite(b"\x00\x07junk", b"\x00\x03\x00\x05other")]
        await broker.partition(OFFSETS_TOPIC, 0).append(build_batch(junk, now_ms=0))
    with caplog.at_level(logging.WARNING, logger="kafkalite.groups"):
        async with files() as broker:
            assert (await member.beat(broker)).error_code == 0  # its group came back
            assert "Consumer group other: its stored records cannot be read" in caplog.text


async def test_a_failed_tombstone_is_written_again_by_a_later_heartbeat_of_another_member(
    files: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = OffsetManager.store_records
    fail_next: list[bool] = []

    async def flaky(self: OffsetManager, batches: Any) -> dict[str, Exception]:
        if fail_next:
            fail_next.pop()
            return {group_id: StorageError("I/O error") for group_id, _ in batches}
        return await store(self, batches)

    async with files() as broker:
        await broker.create_topic(TOPIC, partitions=2)
        members = [Member("m1"), Member("m2")]
        await settled(broker, members)
        monkeypatch.setattr(OffsetManager, "store_records", flaky)
        fail_next.extend([True, True])  # the leave, and the new target the next heartbeat computes
        assert (await broker.groups.consumer_heartbeat(HeartbeatRequest(GROUP, "m2", -1))).error_code == 0
        assert (await members[0].beat(broker)).error_code == 0
        assert not fail_next
        # The heartbeats of the one left change its own records only, yet look at the whole group again.
        await settled(broker, members[:1])
    async with files() as broker:
        assert member_ids(broker) == ["m1"]
        assert all(b"m2" not in key for key in broker.offsets.consumer_group_records())
