"""Client quotas: Kafka's resolution order, the byte-rate window and its throttle time, Describe/AlterClientQuotas on
the wire (every version), and a real producer and consumer throttled by them (throttle_time_ms reaches the client)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path

import confluent_kafka
import pytest
from wire_client import WireClient

from kafkalite.broker import Broker
from kafkalite.protocol.wire import ApiKey
from kafkalite.security.quotas import CLIENT_ID, FETCH_RATE, PRODUCE_RATE, USER, InvalidQuotaError, QuotaStore, entity
from kafkalite.server import KafkaServer, run_in_thread
from kafkalite.server.dispatch import supported_ranges

pytestmark = pytest.mark.timeout(60)

RANGES = {api_key: list(range(lo, hi + 1)) for api_key, lo, hi in supported_ranges()}


def test_resolution_follows_kafkas_order(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path)
    store.alter(
        [
            (entity([(CLIENT_ID, None)]), PRODUCE_RATE, 1.0),
            (entity([(CLIENT_ID, "app")]), PRODUCE_RATE, 2.0),
            (entity([(USER, None)]), PRODUCE_RATE, 3.0),
            (entity([(USER, "alice")]), PRODUCE_RATE, 4.0),
            (entity([(USER, "alice"), (CLIENT_ID, "app")]), PRODUCE_RATE, 5.0),
        ]
    )
    assert store.resolve("alice", "app", PRODUCE_RATE) == (entity([(USER, "alice"), (CLIENT_ID, "app")]), 5.0)
    assert store.resolve("alice", "other", PRODUCE_RATE) == (entity([(USER, "alice")]), 4.0)
    assert store.resolve("bob", "app", PRODUCE_RATE) == (entity([(USER, None)]), 3.0)
    assert store.resolve("bob", "app", FETCH_RATE) is None
    assert QuotaStore(tmp_path).items() == store.items()  # persisted


def test_throttle_time_is_kafkas_formula() -> None:
    store = QuotaStore(None)
    store.alter([(entity([(CLIENT_ID, "c")]), PRODUCE_RATE, 1000.0)])
    assert store.record("u", "c", PRODUCE_RATE, 500, now=100.0) == 0
    # 3000 bytes within one one-second sample against 1000 B/s: (3000 - 1000) / 1000 * 1 s = 2000 ms
    assert store.record("u", "c", PRODUCE_RATE, 2500, now=100.5) == 2000
    assert store.record("u", "other", FETCH_RATE, 10**9, now=100.5) == 0
    assert store.record("u", "c", PRODUCE_RATE, 1, now=200.0) == 0  # the window has moved on


@pytest.mark.parametrize(
    ("pairs", "key", "value", "message"),
    [
        ([("group", "g")], PRODUCE_RATE, 1.0, "invalid quota entity"),
        ([(USER, None), (USER, "u")], PRODUCE_RATE, 1.0, "invalid quota entity"),  # the fuzzer's TypeError
        ([(CLIENT_ID, "c"), (CLIENT_ID, None)], PRODUCE_RATE, 1.0, "invalid quota entity"),
        ([(USER, "u")], "connection_creation_rate", 1.0, "not a quota key"),
        ([("ip", "1.2.3.4"), (USER, "u")], "connection_creation_rate", 1.0, "cannot be combined"),
        ([(USER, "u")], PRODUCE_RATE, -5.0, "positive"),
    ],
)
def test_invalid_changes(pairs: list[tuple[str, str]], key: str, value: float, message: str) -> None:
    with pytest.raises(InvalidQuotaError, match=message):
        QuotaStore(None).alter([(entity(pairs), key, value)])


@pytest.fixture
async def server() -> AsyncIterator[KafkaServer]:
    async with Broker(data_dir=None) as broker:
        server = KafkaServer(broker, "127.0.0.1", 0)
        await server.start()
        yield server
        await server.close()


@pytest.mark.parametrize("version", RANGES[ApiKey.ALTER_CLIENT_QUOTAS])
async def test_alter_and_describe_client_quotas(server: KafkaServer, version: int) -> None:
    client = await WireClient.connect(server.port)

    def entry(name: str | None, key: str, value: float, remove: bool = False) -> object:
        return client.nested(
            49,
            version,
            "EntryData",
            entity=[client.nested(49, version, "EntityData", entity_type=CLIENT_ID, entity_name=name)],
            ops=[client.nested(49, version, "OpData", key=key, value=value, remove=remove)],
        )

    altered = await client.request(
        49, version, entries=[entry("app", PRODUCE_RATE, 1024.0), entry(None, "bogus", 1.0)], validate_only=False
    )
    assert [e.error_code for e in altered.entries] == [0, 42]
    twice = client.nested(
        49,
        version,
        "EntryData",
        entity=[client.nested(49, version, "EntityData", entity_type=USER, entity_name=name) for name in ("u", None)],
        ops=[client.nested(49, version, "OpData", key=PRODUCE_RATE, value=1.0, remove=False)],
    )
    refused = await client.request(49, version, entries=[twice], validate_only=False)
    assert [e.error_code for e in refused.entries] == [42]  # INVALID_REQUEST, and the connection still answers
    component = client.nested(48, version, "ComponentData", entity_type=CLIENT_ID, match_type=0, match="app")
    described = await client.request(48, version, components=[component], strict=True)
    assert described.error_code == 0
    assert [[(v.key, v.value) for v in e.values] for e in described.entries] == [[(PRODUCE_RATE, 1024.0)]]
    removed = await client.request(49, version, entries=[entry("app", PRODUCE_RATE, 0.0, True)], validate_only=False)
    assert [e.error_code for e in removed.entries] == [0]
    assert (await client.request(48, version, components=[component], strict=False)).entries == ()
    await client.close()


@pytest.mark.parametrize("acks", ["1", "all"])
def test_a_real_producer_and_consumer_are_throttled(tmp_path: Path, acks: str) -> None:
    """acks=all with fsync on: the answer waits for its round (a task started when the request is handled) and still
    carries the throttle time."""
    store = QuotaStore(tmp_path)
    store.alter(
        [(entity([(CLIENT_ID, "slow")]), PRODUCE_RATE, 20_000.0), (entity([(CLIENT_ID, "slow")]), FETCH_RATE, 20_000.0)]
    )
    with run_in_thread(tmp_path, fsync=acks == "all") as server:
        throttled: list[int] = []
        seen = threading.Event()

        def on_throttle(event: confluent_kafka.ThrottleEvent) -> None:
            throttled.append(int(event.throttle_time * 1000))
            seen.set()

        common = {"bootstrap.servers": server.bootstrap, "client.id": "slow", "throttle_cb": on_throttle}
        producer = confluent_kafka.Producer({**common, "linger.ms": 0, "acks": acks})
        for _ in range(200):
            producer.produce("quota", b"x" * 1000)
            producer.poll(0)
        assert producer.flush(60) == 0
        assert seen.wait(10), "the producer was never told to back off"
        assert all(ms > 0 for ms in throttled)

        throttled.clear()
        seen.clear()
        consumer = confluent_kafka.Consumer({**common, "group.id": "q", "auto.offset.reset": "earliest"})
        consumer.subscribe(["quota"])
        got = 0
        while got < 200:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                got += 1
        consumer.close()
        assert throttled, "the consumer was never told to back off"
