"""10,000 partitions on the file engine: the broker keeps about one descriptor per partition (the active segment's
`.log`), so a topic that size is served under an ordinary open-file limit, and survives a restart.

Timing is not asserted here (that is `bench/`); the test only has to finish within its timeout.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.broker import Broker, BrokerConfig
from kafkalite.protocol.records import RecordToWrite, build_batch, iter_records

PARTITIONS = 10_000
SLACK_FDS = 64  # the broker's own files and sockets, besides one per partition
pytestmark = pytest.mark.timeout(300)  # a hang guard, not a speed check: 20 s idle, near 120 s on a loaded CI box


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def enough_descriptors() -> Iterator[None]:
    """Raise the soft open-file limit to the hard one, as `kafkalite serve` does; skip when even that is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = PARTITIONS + 1024
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"hard open-file limit {hard} < {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd")
async def test_ten_thousand_partitions_cost_one_descriptor_each(tmp_path: Path) -> None:
    config = BrokerConfig(data_dir=tmp_path, fsync=False)
    chosen = [0, 1, 4_999, PARTITIONS - 1]
    async with Broker(config=config) as broker:
        before = open_fds()
        await broker.create_topic("wide", PARTITIONS)
        assert open_fds() - before <= PARTITIONS + SLACK_FDS
        for partition in chosen:
            batch = build_batch([RecordToWrite(b"p%d" % partition)], now_ms=int(time.time() * 1000))
            await broker.produce("wide", partition, batch, acks=1)
        assert open_fds() - before <= PARTITIONS + SLACK_FDS
        for partition in chosen:
            data = broker.fetch("wide", partition, 0, 1 << 20).records
            assert [r.value for r in iter_records(data)] == [b"p%d" % partition]

    async with Broker(config=config) as broker:  # a clean restart opens them all again, no more costly
        assert len(broker.topic("wide").partitions) == PARTITIONS
        assert open_fds() <= before + PARTITIONS + SLACK_FDS
        for partition in chosen:
            data = broker.fetch("wide", partition, 0, 1 << 20).records
            assert [r.value for r in iter_records(data)] == [b"p%d" % partition]
