"""A Fetch naming a topic the principal may read and one it may not, over raw bytes on every served version: the
first comes back with its records (a range of the segment file, read into the answer the authorizer completes), the
second with TOPIC_AUTHORIZATION_FAILED; a super user's Fetch of both gets both."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from authorized_server import ALICE_PLAIN, authorized_server, connect
from wire_client import WireClient

from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.protocol.wire import ApiKey
from kafkalite.server import KafkaServer
from kafkalite.server.dispatch import supported_ranges
from kafkalite.storage.file_records import ZERO_COPY_MIN_BYTES
from wire_requests import consumer_fetch

pytestmark = pytest.mark.timeout(60)

FETCH_VERSIONS = next(range(lo, hi + 1) for key, lo, hi in supported_ranges() if key == ApiKey.FETCH)
TOPIC_AUTHORIZATION_FAILED = 29
READABLE, HIDDEN = "readable", "hidden"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[KafkaServer, bytes]]:
    """A broker with an authorizer, alice (PLAIN) allowed to read `READABLE` only, and one batch in each topic, large
    enough that a read of it is a range of the segment file."""
    batch = build_batch([RecordToWrite(bytes([n]) * 1024) for n in range(40)], now_ms=int(time.time() * 1000))
    assert len(batch) > ZERO_COPY_MIN_BYTES
    async with authorized_server(tmp_path) as server:
        for topic in (READABLE, HIDDEN):
            await server.broker.create_topic(topic, 1)
            await server.broker.produce(topic, 0, batch)
        admin = await connect(server, "PLAINTEXT")
        allow_read = admin.nested(
            30,
            3,
            "AclCreation",
            resource_type=2,  # TOPIC
            resource_name=READABLE,
            resource_pattern_type=3,  # LITERAL
            principal="User:alice",
            host="*",
            operation=3,  # READ
            permission_type=3,  # ALLOW
        )
        assert [r.error_code for r in (await admin.request(30, 3, creations=[allow_read])).results] == [0]
        await admin.close()
        yield server, batch


async def _fetch(client: WireClient, server: KafkaServer, version: int) -> dict[str, Any]:
    """A Fetch of offset 0 of both topics (by id from v13); each topic's one partition answer, by name."""
    topics = server.broker.topics
    requested = [
        client.nested(
            1,
            version,
            "FetchTopic",
            **({"topic_id": topics[name].topic_id} if version >= 13 else {"topic": name}),
            partitions=[
                client.nested(1, version, "FetchPartition", partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
            ],
        )
        for name in (READABLE, HIDDEN)
    ]
    answer = await client.request(1, version, **consumer_fetch(requested))
    by_id = {topic.topic_id: topic.name for topic in topics.values()}
    return {
        (by_id[topic.topic_id] if version >= 13 else topic.topic): topic.partitions[0] for topic in answer.responses
    }


@pytest.mark.parametrize("version", FETCH_VERSIONS)
async def test_only_the_readable_topic_is_answered_with_records(
    served: tuple[KafkaServer, bytes], version: int
) -> None:
    server, batch = served
    alice = await connect(server, "SASL_PLAINTEXT")
    assert (await alice.request(17, 1, mechanism="PLAIN")).error_code == 0
    assert (await alice.request(36, 2, auth_bytes=ALICE_PLAIN)).error_code == 0
    partitions = await _fetch(alice, server, version)
    assert (partitions[READABLE].error_code, partitions[READABLE].high_watermark) == (0, 40)
    assert partitions[READABLE].records == batch  # the stored batch (its base offset was 0 as built)
    hidden = partitions[HIDDEN]
    assert (hidden.error_code, hidden.high_watermark, hidden.last_stable_offset) == (TOPIC_AUTHORIZATION_FAILED, -1, -1)
    assert hidden.records is None  # null, as Kafka answers a partition with an error
    assert not hidden.aborted_transactions
    await alice.close()


@pytest.mark.parametrize("version", FETCH_VERSIONS)
async def test_a_super_user_reads_both(served: tuple[KafkaServer, bytes], version: int) -> None:
    server, batch = served
    admin = await connect(server, "PLAINTEXT")
    partitions = await _fetch(admin, server, version)
    assert [(p.error_code, p.records) for p in partitions.values()] == [(0, batch), (0, batch)]
    await admin.close()
