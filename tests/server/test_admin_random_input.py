"""Random, well-formed but hostile admin requests (unknown and illegal names, any int32 partition index, limits and
epochs, empty and repeated entries): every one is answered, decodes with every byte consumed, and logs no
traceback. Seeded, so a failure replays."""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import pytest

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.server import serve

pytestmark = pytest.mark.timeout(120)

INT32 = (-(2**31), 2**31 - 1)
ROUNDS = 40


def _name(rng: random.Random) -> str:
    return rng.choice(["known", "known", "__consumer_offsets", "unknown", "", "..", "x" * 300, "bad name!", "0"])


def _index(rng: random.Random) -> int:
    return rng.choice([0, 1, 2, -1, rng.randint(*INT32), INT32[0], INT32[1]])


def _indexes(rng: random.Random) -> list[int]:
    return [_index(rng) for _ in range(rng.randint(0, 4))]


def _requests(raw: RawClient, rng: random.Random) -> list[tuple[int, int, dict[str, Any]]]:
    n = raw.nested
    name, index, indexes = (lambda: _name(rng)), (lambda: _index(rng)), (lambda: _indexes(rng))
    log_dir_topic = n(35, 4, "DescribableLogDirTopic", topic=name(), partitions=indexes())
    move = n(34, 2, "AlterReplicaLogDirTopic", name=name(), partitions=indexes())
    cursor = n(75, 0, "Cursor", topic_name=name(), partition_index=index())
    election = n(43, 2, "TopicPartitions", topic=name(), partitions=indexes())
    reassignment = n(45, 1, "ReassignablePartition", partition_index=index(), replicas=rng.choice([None, indexes()]))
    listing = n(46, 0, "ListPartitionReassignmentsTopics", name=name(), partition_indexes=indexes())
    quorum = n(55, 2, "TopicData", topic_name=name(), partitions=[n(55, 2, "PartitionData", partition_index=index())])
    deletion = n(47, 0, "OffsetDeleteRequestPartition", partition_index=index())
    epoch = n(23, 4, "OffsetForLeaderPartition", partition=index(), current_leader_epoch=index(), leader_epoch=index())
    described = n(
        32,
        4,
        "DescribeConfigsResource",
        resource_type=rng.choice([0, 2, 4, 8, 16, 32, -1, 127]),
        resource_name=rng.choice([name(), "-0", "--5", "4294967296"]),
        configuration_keys=rng.choice([None, [], ["retention.ms", "nope"]]),
    )
    change = n(
        44,
        1,
        "AlterableConfig",
        name=rng.choice(["retention.ms", "cleanup.policy", "root", "kafkalite.server", "nope"]),
        config_operation=rng.randint(-128, 127),
        value=rng.choice([None, "", "1", "compact", "DEBUG", "x" * 40]),
    )
    altered = n(
        44, 1, "AlterConfigsResource", resource_type=rng.choice([2, 4, 8, 99]), resource_name=name(), configs=[change]
    )
    return [
        (35, 4, {"topics": rng.choice([None, [log_dir_topic]])}),
        (
            34,
            2,
            {
                "dirs": [
                    n(34, 2, "AlterReplicaLogDir", path=rng.choice(["", "/", "rel", "/tmp", "/a\x00b"]), topics=[move])
                ]
            },
        ),
        (
            75,
            0,
            {
                "topics": [n(75, 0, "TopicRequest", name=name()) for _ in range(rng.randint(0, 3))],
                "response_partition_limit": index(),
                "cursor": rng.choice([None, cursor]),
            },
        ),
        (43, 2, {"election_type": rng.randint(-128, 127), "timeout": index(), "topic_partitions": [election]}),
        (43, 2, {"election_type": 0, "timeout": index(), "topic_partitions": None}),
        (
            45,
            1,
            {
                "timeout": index(),
                "allow_replication_factor_change": rng.random() < 0.5,
                "topics": [n(45, 1, "ReassignableTopic", name=name(), partitions=[reassignment])],
            },
        ),
        (46, 0, {"timeout": index(), "topics": rng.choice([None, [listing]])}),
        (55, 2, {"topics": [quorum]}),
        (74, 1, {"resource_types": [rng.randint(-128, 127) for _ in range(rng.randint(0, 3))]}),
        (
            47,
            0,
            {
                "group_id": rng.choice(["", "g", "unknown-group"]),
                "topics": [n(47, 0, "OffsetDeleteRequestTopic", name=name(), partitions=[deletion])],
            },
        ),
        (
            23,
            4,
            {"replica_id": index(), "topics": [n(23, 4, "OffsetForLeaderTopic", topic=name(), partitions=[epoch])]},
        ),
        (32, 4, {"include_synonyms": True, "include_documentation": True, "resources": [described]}),
        (44, 1, {"validate_only": True, "resources": [altered]}),
    ]


@pytest.mark.parametrize("engine", ["memory", "disk"])
async def test_random_admin_requests_are_all_answered(
    engine: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kafkalite")
    level = logging.getLogger("kafkalite.server").level
    rng = random.Random(20261130)
    async with Broker(tmp_path if engine == "disk" else None, fsync=False) as broker, serve(broker) as server:
        await broker.create_topic("known", 2)
        raw = await RawClient.connect(server)
        try:
            for _ in range(ROUNDS):
                for api_key, version, fields in _requests(raw, rng):
                    response = await raw.request(api_key, version, **fields)  # decodes every byte, or fails
                    assert response is not None
        finally:
            logging.getLogger("kafkalite.server").setLevel(level)
            await raw.close()
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info is not None or r.levelno >= logging.ERROR]
    assert not tracebacks
