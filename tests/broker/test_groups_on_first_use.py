"""The group coordinators are built when first needed: a broker that finds no group stored starts without importing
them (a tenth of a start's imports) and builds them on its first group call; one that finds groups stored restores
them at start, as before, so their members' sessions run from the broker's start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kafkalite
from kafkalite.errors import ClosedError

# Run in a fresh interpreter per life, so that what a start imports is seen in `sys.modules`.
LIFE = """
import asyncio, sys
import kafkalite

def built():
    return "kafkalite.groups.coordinator" in sys.modules and "kafkalite.broker.group_service" in sys.modules

async def main(data, first_life):
    async with kafkalite.Broker(data) as broker:
        print("at start:", built())
        if first_life:
            joined = await broker.groups.join(
                "billing", "", protocol_type="consumer", protocols=[("range", b"subscription")],
                session_timeout_ms=30_000, rebalance_timeout_ms=30_000, client_id="app",
            )
            print("after a join:", built(), joined.error_code, joined.generation_id)
            synced = await broker.groups.sync(
                "billing", joined.member_id, joined.generation_id, assignments={joined.member_id: b"all"}
            )
            print("synced:", synced.error_code, synced.assignment)
        else:
            described = broker.groups.describe("billing")
            print("restored:", described.state, len(described.members), described.members[0].assignment)

asyncio.run(main(sys.argv[1], sys.argv[2] == "first"))
"""


def _life(data: Path, which: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", LIFE, str(data), which], capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_broker_with_no_group_stored_builds_the_coordinators_on_its_first_group_call(tmp_path: Path) -> None:
    assert _life(tmp_path, "first") == ["at start: False", "after a join: True 0 1", "synced: 0 b'all'"]


def test_a_broker_with_a_group_stored_restores_it_at_start(tmp_path: Path) -> None:
    _life(tmp_path, "first")
    assert _life(tmp_path, "second") == ["at start: True", "restored: Stable 1 b'all'"]


async def test_the_groups_of_a_broker_not_started_or_closed_are_refused(tmp_path: Path) -> None:
    broker = kafkalite.Broker(tmp_path)
    with pytest.raises(ClosedError, match="not started"):
        _ = broker.groups
    async with broker:
        pass
    with pytest.raises(ClosedError, match="the broker is closed"):
        _ = broker.groups
