"""The pytest plugin as a user meets it: pytest sessions of their own (pytester, in a subprocess, so the plugin is
loaded through its `pytest11` entry point exactly as after `pip install kafkalite`), with real client libraries, and
with `--kafka-bootstrap` pointing the same fixtures at another Kafka cluster (Tansu)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from interop.tansu import Tansu

CLIENT_TESTS = """
import asyncio
import uuid

import pytest


def test_confluent_kafka_round_trip(kafka_bootstrap, kafka_topic):
    from confluent_kafka import Consumer, Producer

    topic = kafka_topic("orders", partitions=3)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(5):
        producer.produce(topic, b"v%d" % i, key=b"k")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    for _ in range(200):
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            got.append(message.value())
        if len(got) == 5:
            break
    consumer.close()
    assert sorted(got) == [b"v%d" % i for i in range(5)]


def test_kafka_python_round_trip(kafka_bootstrap, kafka_topic):
    from kafka import KafkaConsumer, KafkaProducer

    topic = kafka_topic("events")
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    producer.send(topic, b"hello").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=10000)
    assert [m.value for m in consumer][:1] == [b"hello"]
    consumer.close()


@pytest.mark.asyncio
async def test_aiokafka_round_trip(kafka_bootstrap, kafka_topic):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = kafka_topic("clicks", partitions=2)
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as producer:
        await producer.send_and_wait(topic, b"click", key=b"u")
    async with AIOKafkaConsumer(topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest") as c:
        message = await asyncio.wait_for(c.getone(), 30)
    assert message.value == b"click"


@pytest.mark.asyncio
async def test_the_embedded_api(kafkalite_broker):
    await kafkalite_broker.create_topic("payments", partitions=2)
    async with kafkalite_broker.producer() as producer:
        sent = await producer.send("payments", b"42", key=b"user-1")
    async with kafkalite_broker.consumer("payments", group_id=None) as consumer:
        [message] = await consumer.getmany(timeout=5)
    assert (message.partition, message.offset, message.value) == (sent.partition, sent.offset, b"42")
"""


def test_the_fixtures_serve_every_client_library_with_no_configuration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_clients=CLIENT_TESTS)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def guide_example(section: str) -> str:
    """The first Python block under `## {section}` in docs/pytest-plugin.md, as a reader copies it."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "pytest-plugin.md").read_text()
    after = guide.split(f"\n## {section}\n", 1)[1]
    return after.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_the_guides_faststream_example_passes_as_written(pytester: pytest.Pytester) -> None:
    """FastStream's subscriber, publisher, group and JSON on the wire through `kafka_bootstrap` and `kafka_topic`."""
    pytester.makepyfile(test_faststream=guide_example("FastStream"))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_each_test_gets_its_own_topics_and_they_are_deleted_after_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_isolation="""
        from confluent_kafka import Producer

        NAMES = []

        def write_one(kafka_bootstrap, topic):
            producer = Producer({"bootstrap.servers": kafka_bootstrap})
            producer.produce(topic, b"x")
            assert producer.flush(30) == 0

        def test_first(kafkalite_server, kafka_bootstrap, kafka_topic):
            NAMES.append(kafka_topic("orders"))
            write_one(kafka_bootstrap, NAMES[-1])
            assert kafkalite_server.call(_end(kafkalite_server, NAMES[-1])) == 1

        def test_second(kafkalite_server, kafka_bootstrap, kafka_topic):
            NAMES.append(kafka_topic("orders"))
            assert NAMES[0] != NAMES[1] and NAMES[1].startswith("orders-")
            assert kafkalite_server.call(_end(kafkalite_server, NAMES[1])) == 0  # nothing of test_first's
            assert NAMES[0] not in kafkalite_server.list_topics()

        def test_the_server_is_one_for_the_session(kafkalite_server, kafka_bootstrap):
            assert kafka_bootstrap == kafkalite_server.bootstrap and not kafkalite_server.external
            assert NAMES[1] not in kafkalite_server.list_topics()

        async def _end(server, topic):
            return server.broker.partition(topic, 0).high_watermark
        """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


@pytest.fixture(scope="module")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tansu]:
    peer = Tansu(tmp_path_factory.mktemp("tansu") / "tansu.log")
    try:
        yield peer
    finally:
        peer.stop()


def test_kafka_bootstrap_points_the_same_fixtures_at_another_cluster(pytester: pytest.Pytester, tansu: Tansu) -> None:
    pytester.makepyfile(
        test_external=f'''
        import pytest
        import kafkalite

        def test_the_address_is_the_external_one(kafkalite_server, kafka_bootstrap):
            assert kafka_bootstrap == "{tansu.bootstrap}"
            assert kafkalite_server.external and kafkalite_server.broker is None

        def test_topics_are_made_on_the_external_cluster(kafkalite_server, kafka_topic):
            name = kafka_topic("orders", partitions=2)
            assert name in kafkalite_server.list_topics()

        @pytest.mark.asyncio
        async def test_kafkalite_broker_is_a_connection_with_the_same_interface(kafkalite_broker, kafka_topic):
            assert isinstance(kafkalite_broker, kafkalite.Cluster)
            topic = kafka_topic("payments", partitions=3)
            async with kafkalite_broker.producer() as producer:
                sent = await producer.send(topic, b"v", key=b"user-1")
            assert sent.partition == kafkalite.client.md5_hash(b"user-1") % 3
        '''
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", f"--kafka-bootstrap={tansu.bootstrap}")
    result.assert_outcomes(passed=3)


def test_the_environment_variable_works_like_the_option(
    pytester: pytest.Pytester, tansu: Tansu, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_env=f'''
        def test_it(kafka_bootstrap):
            assert kafka_bootstrap == "{tansu.bootstrap}"
        '''
    )
    monkeypatch.setenv("KAFKALITE_TEST_BOOTSTRAP", tansu.bootstrap)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_bad_kafka_bootstrap_is_a_usage_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_it(): pass")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "--kafka-bootstrap=nohost")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kafka-bootstrap: bad bootstrap address 'nohost'*"])


def test_the_options_are_documented_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*KafkaLite fixtures*", "*--kafka-bootstrap=HOST:PORT*"])


def test_the_fixtures_are_listed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--fixtures")
    for name in ("kafkalite_broker", "kafkalite_server", "kafka_topic", "kafka_bootstrap"):
        result.stdout.fnmatch_lines([f"*{name}*"])
