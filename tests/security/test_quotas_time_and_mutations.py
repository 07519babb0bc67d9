"""The quotas beyond byte rates: request_percentage (the share of the event loop's time a client's requests take) and
controller_mutation_rate (partitions created or deleted per second, KIP-599), over the wire with real clients."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import confluent_kafka
import kafka
import pytest
from kafka.admin import NewPartitions, NewTopic
from wire_client import WireClient

from kafkalite.errors import UnknownTopicError
from kafkalite.security.quotas import (
    CLIENT_ID,
    MUTATION_RATE,
    REQUEST_PERCENTAGE,
    SAMPLES,
    QuotaStore,
    entity,
)
from kafkalite.server import run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

THROTTLING_QUOTA_EXCEEDED = 89


def test_the_mutation_bucket_lets_one_request_through_then_refuses_until_it_refills() -> None:
    store = QuotaStore(None)
    store.alter([(entity([(CLIENT_ID, "admin")]), MUTATION_RATE, 2.0)])
    assert store.mutations_enforced
    assert not store.request_time_enforced
    bucket = store.mutation_bucket("u", "admin", now=0.0)
    assert bucket is not None
    assert bucket.throttle_ms() == 0
    bucket.take(2 * SAMPLES + 4)  # a burst of quota x window, then 4 more: the bucket is 4 below zero
    assert bucket.throttle_ms() == 2000  # 4 mutations at 2 per second
    later = store.mutation_bucket("u", "admin", now=1.0)
    assert later is not None
    assert later.throttle_ms() == 1000
    assert store.mutation_bucket("u", "other", now=1.0) is None


def _store_with(tmp_path: Path, key: str, value: float) -> None:
    QuotaStore(tmp_path).alter([(entity([(CLIENT_ID, "limited")]), key, value)])


def test_kafka_python_create_topics_gets_throttling_quota_exceeded(tmp_path: Path) -> None:
    _store_with(tmp_path, MUTATION_RATE, 5.0)  # a burst of 55 partitions
    with run_in_thread(tmp_path, fsync=False) as server:
        admin = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="limited")
        try:
            first = admin.create_topics([NewTopic("m-big", 60, 1), NewTopic("m-next", 1, 1)], raise_errors=False)
            codes = {t["name"]: t["error_code"] for t in first["topics"]}
            # m-big is let through (the bucket was not below zero) and takes it 5 below; m-next is refused
            assert codes == {"m-big": 0, "m-next": THROTTLING_QUOTA_EXCEEDED}
            assert len(server.broker.topic("m-big").partitions) == 60
            with pytest.raises(UnknownTopicError):
                server.broker.topic("m-next")
            time.sleep(1.2)  # 5 below zero at 5 per second: back at zero after a second (kafka-python waits it out)
            assert admin.create_topics([NewTopic("m-later", 1, 1)], raise_errors=False)["topics"][0]["error_code"] == 0
        finally:
            admin.close()
        other = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="unlimited")
        try:
            assert other.create_topics([NewTopic("u-big", 100, 1)], raise_errors=False)["topics"][0]["error_code"] == 0
        finally:
            other.close()


@pytest.mark.parametrize("api", ["create_partitions", "delete_topics"])
def test_create_partitions_and_delete_topics_count_partitions(tmp_path: Path, api: str) -> None:
    with run_in_thread(tmp_path, fsync=False) as server:
        unlimited = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="setup")
        unlimited.create_topics([NewTopic("p-one", 40, 1), NewTopic("p-two", 40, 1)])
        unlimited.close()
        server.server.security.quotas.alter([(entity([(CLIENT_ID, "limited")]), MUTATION_RATE, 2.0)])
        admin = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="limited")
        try:
            if api == "create_partitions":
                grow = {"p-one": NewPartitions(80), "p-two": NewPartitions(41)}
                grown = admin.create_partitions(grow, raise_errors=False)  # CreatePartitions v3
                codes = {t.name: t.error_code for t in grown.results}
            else:
                deleted = admin.delete_topics(["p-one", "p-two"], raise_errors=False)
                codes = {t["name"]: t["error_code"] for t in deleted["topics"]}
        finally:
            admin.close()
    assert codes == {"p-one": 0, "p-two": THROTTLING_QUOTA_EXCEEDED}  # 40 mutations over a burst of 22


async def test_old_create_topics_versions_are_served_and_throttled(tmp_path: Path) -> None:
    _store_with(tmp_path, MUTATION_RATE, 10.0)  # a burst of 110 partitions
    with run_in_thread(tmp_path, fsync=False) as server:
        client = await WireClient.connect(server.port, client_id="limited")
        topic = client.nested(
            19,
            5,
            "CreatableTopic",
            name="old-big",
            num_partitions=120,
            replication_factor=1,
            assignments=[],
            configs=[],
        )
        answer = await client.request(19, 5, topics=[topic], timeout=10_000, validate_only=False)
        assert [t.error_code for t in answer.topics] == [0]
        assert 900 <= answer.throttle_time.total_seconds() * 1000 <= 1000  # 10 below zero at 10 per second
        again = client.nested(
            19, 5, "CreatableTopic", name="old-next", num_partitions=1, replication_factor=1, assignments=[], configs=[]
        )
        began = time.monotonic()
        answer = await client.request(19, 5, topics=[again], timeout=10_000, validate_only=False)
        assert time.monotonic() - began >= 0.8  # the connection was muted for the throttle time (KIP-219)
        assert [t.error_code for t in answer.topics] == [0]  # v5 cannot be refused: served, and throttled
        await client.close()


def test_request_percentage_throttles_a_real_producer(tmp_path: Path) -> None:
    _store_with(tmp_path, REQUEST_PERCENTAGE, 0.5)  # 5 ms of the loop's time per second
    with run_in_thread(tmp_path, fsync=False) as server:
        throttled: list[float] = []
        seen = threading.Event()

        def on_throttle(event: confluent_kafka.ThrottleEvent) -> None:
            throttled.append(event.throttle_time)
            seen.set()

        config = {"bootstrap.servers": server.bootstrap, "client.id": "limited", "throttle_cb": on_throttle}
        producer = confluent_kafka.Producer({**config, "linger.ms": 0, "acks": 1})
        deadline = time.monotonic() + 20
        while not seen.is_set() and time.monotonic() < deadline:
            producer.produce("busy", b"x" * 100)
            producer.poll(0.005)  # one small Produce request at a time: a steady stream of loop time
        assert producer.flush(60) == 0
        assert seen.is_set(), "the producer was never told to back off"
        assert any(seconds > 0 for seconds in throttled)  # librdkafka also reports the end of a throttle (0)
        free: list[float] = []
        other = confluent_kafka.Producer({**config, "client.id": "free", "throttle_cb": free.append})
        for _ in range(300):
            other.produce("busy", b"x" * 100)
        assert other.flush(60) == 0
        other.poll(0.5)
        assert not any(event.throttle_time for event in free), "a client without a quota is never throttled"


async def test_request_percentage_mutes_the_connection_for_the_throttle_time(tmp_path: Path) -> None:
    _store_with(tmp_path, REQUEST_PERCENTAGE, 0.5)
    with run_in_thread(tmp_path, fsync=False) as server:
        client = await WireClient.connect(server.port, client_id="limited")
        fields = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        throttle_s = 0.0
        for _ in range(2000):
            answer = await client.request(3, 12, **fields)
            throttle_s = answer.throttle_time.total_seconds()
            if throttle_s:
                break
        assert throttle_s > 0, "Metadata requests never went over 0.5% of the loop's time"
        began = time.monotonic()
        await client.request(3, 12, **fields)
        assert time.monotonic() - began >= throttle_s * 0.9
        versions = await client.request(18, 3, client_software_name="t", client_software_version="1")
        assert versions.throttle_time.total_seconds() == 0  # ApiVersions is never counted
        await client.close()
