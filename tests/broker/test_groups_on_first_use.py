"""The group coordinators are built when first needed: a broker that finds no group stored starts without importing
them and builds them on its first group call; one that finds groups stored (classic or KIP-848) restores them at
start, as before, so their members' sessions run from the broker's start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kafkalite
from kafkalite.errors import ClosedError

# One broker life per fresh interpreter, with the modules `kafkalite serve` imports (the wire server and every
# handler), so that what a start imports is what `sys.modules` holds.
LIFE = """
import asyncio, sys, uuid
import kafkalite.server  # the wire server and its handlers, as `kafkalite serve` imports them
from kafkalite.broker import Broker

def loaded():
    return sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("kafkalite.groups."))

async def main(data, life):
    async with Broker(data) as broker:
        print("at start:", loaded(), "kafkalite.broker.group_service" in sys.modules)
        if life == "classic":
            joined = await broker.groups.join(
                "billing", "", protocol_type="consumer", protocols=[("range", b"subscription")],
                session_timeout_ms=30_000, rebalance_timeout_ms=30_000, client_id="app",
            )
            print("after a join:", "coordinator" in loaded(), joined.error_code, joined.generation_id)
            synced = await broker.groups.sync(
                "billing", joined.member_id, joined.generation_id, assignments={joined.member_id: b"all"}
            )
            print("synced:", synced.error_code, synced.assignment)
        elif life == "kip848":
            from kafkalite.groups import HeartbeatRequest
            await broker.create_topic("orders", partitions=2)
            request = HeartbeatRequest(
                "kip848", str(uuid.uuid4()), 0, rebalance_timeout_ms=30_000,
                subscribed_topic_names=("orders",), owned=(),
            )
            beat = await broker.groups.consumer_heartbeat(request)
            print("joined:", beat.error_code, beat.member_epoch)
        else:
            classic = broker.groups.describe("billing")
            consumer = broker.groups.consumer_describe("kip848", {})
            if classic.state != "Dead":
                print("restored:", classic.state, len(classic.members), classic.members[0].assignment)
            if consumer is not None:
                print("restored:", consumer.state, len(consumer.members))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _life(data: Path, which: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", LIFE, str(data), which], capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_broker_with_no_group_stored_builds_the_coordinators_on_its_first_group_call(tmp_path: Path) -> None:
    assert _life(tmp_path, "classic") == [
        "at start: ['stored_group'] False",  # the one module the offsets' reader needs, and only that
        "after a join: True 0 1",
        "synced: 0 b'all'",
    ]


def test_a_broker_with_a_classic_group_stored_restores_it_at_start(tmp_path: Path) -> None:
    _life(tmp_path, "classic")
    first, *rest = _life(tmp_path, "again")
    assert first.endswith(" True"), first  # the group service built at start, to restore what was stored
    assert rest == ["restored: Stable 1 b'all'"]


def test_a_broker_with_a_consumer_group_stored_restores_it_at_start(tmp_path: Path) -> None:
    assert _life(tmp_path, "kip848")[1] == "joined: 0 1"
    first, *rest = _life(tmp_path, "again")
    assert first.endswith(" True"), first  # the group service built at start, to restore what was stored
    assert rest == ["restored: Stable 1"]


async def test_the_groups_of_a_broker_not_started_are_refused(tmp_path: Path) -> None:
    broker = kafkalite.Broker(tmp_path)
    with pytest.raises(ClosedError, match="not started"):
        _ = broker.groups


async def test_a_closed_broker_that_never_needed_its_groups_still_answers_for_them(tmp_path: Path) -> None:
    async with kafkalite.Broker(tmp_path) as broker:
        pass
    assert broker.groups.list_groups() == []  # built now, as its close would have left it
    assert broker.groups.describe("billing").state == "Dead"
