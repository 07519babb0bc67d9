"""Transactions against `kafkalite serve` with each client's transactional API (confluent-kafka, aiokafka,
kafka-python): commit and abort as read_committed and read_uncommitted consumers see them, zombie fencing (and the
broker's log line saying why), a transaction the broker times out, and consumer offsets committed in a transaction."""

from __future__ import annotations

import time

import kafka
import kafka.structs
import pytest

from .served import ServedBroker
from .txn_clients import TXN_CLIENTS, TxnProducer, read_values

pytestmark = [pytest.mark.interop, pytest.mark.timeout(240)]

CLIENTS = [pytest.param(cls, id=cls.name) for cls in TXN_CLIENTS]


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> ServedBroker:
    root = tmp_path_factory.mktemp("txn")
    broker = ServedBroker(
        root / "data",
        root / "serve.log",
        "--fsync",
        "never",
        "--transaction-abort-interval-ms",
        "100",
        "--log-level",
        "DEBUG",
    )
    try:
        yield broker.start()  # type: ignore[misc]
    finally:
        broker.kill()


def topic_for(client: type[TxnProducer], scenario: str) -> str:
    return f"txn-{scenario}-{client.name}"


@pytest.mark.parametrize("client", CLIENTS)
def test_commit_and_abort(txn_broker: ServedBroker, client: type[TxnProducer]) -> None:
    topic = topic_for(client, "commit")
    producer = client(txn_broker.bootstrap, f"{topic}-producer")
    try:
        producer.begin()
        for i in range(3):
            producer.send(topic, b"c%d" % i)
        assert read_values(client.name, txn_broker.bootstrap, topic, "read_committed") == []
        assert read_values(client.name, txn_broker.bootstrap, topic, "read_uncommitted") == [b"c0", b"c1", b"c2"]
        producer.commit()
        producer.begin()
        producer.send(topic, b"aborted")
        producer.abort()
        producer.begin()
        producer.send(topic, b"c3")
        producer.commit()
    finally:
        producer.close()
    assert read_values(client.name, txn_broker.bootstrap, topic, "read_committed") == [b"c0", b"c1", b"c2", b"c3"]
    # read_uncommitted sees the aborted record too, and never a marker as a message.
    assert read_values(client.name, txn_broker.bootstrap, topic, "read_uncommitted") == [
        b"c0",
        b"c1",
        b"c2",
        b"aborted",
        b"c3",
    ]


@pytest.mark.parametrize("client", CLIENTS)
def test_zombie_is_fenced(txn_broker: ServedBroker, client: type[TxnProducer]) -> None:
    topic = topic_for(client, "fence")
    zombie = client(txn_broker.bootstrap, f"{topic}-id")
    zombie.begin()
    zombie.send(topic, b"zombie")
    successor = client(txn_broker.bootstrap, f"{topic}-id")  # fences the zombie, aborting its transaction
    try:
        with pytest.raises(Exception) as failure:
            send_and_commit(zombie, topic, b"zombie-2")
        assert client.fenced(failure.value), repr(failure.value)
        successor.begin()
        successor.send(topic, b"live")
        successor.commit()
    finally:
        successor.close()
        _close_quietly(zombie)
    assert read_values(client.name, txn_broker.bootstrap, topic, "read_committed") == [b"live"]
    # The broker said why, naming the client and the transactional id.
    refusals = [line for line in txn_broker.log().splitlines() if "Refused" in line and f"{topic}-id" in line]
    assert any("PRODUCER_FENCED" in line or "INVALID_PRODUCER_EPOCH" in line for line in refusals), refusals
    assert all("client=" in line for line in refusals)


@pytest.mark.parametrize("client", CLIENTS)
def test_broker_aborts_a_transaction_past_its_timeout(txn_broker: ServedBroker, client: type[TxnProducer]) -> None:
    topic = topic_for(client, "timeout")
    producer = client(txn_broker.bootstrap, f"{topic}-id", timeout_ms=1000)
    try:
        producer.begin()
        producer.send(topic, b"too-slow")
        time.sleep(2.0)  # the transaction's 1 s timeout passes; the broker's sweep runs every 100 ms
        with pytest.raises(Exception) as failure:
            send_and_commit(producer, topic, b"more")
        assert client.fenced(failure.value), repr(failure.value)
    finally:
        _close_quietly(producer)
    assert read_values(client.name, txn_broker.bootstrap, topic, "read_committed") == []
    assert "open for more than 1000 ms" in txn_broker.log()


@pytest.mark.parametrize("client", CLIENTS)
def test_offsets_commit_with_the_transaction(txn_broker: ServedBroker, client: type[TxnProducer]) -> None:
    topic, group = topic_for(client, "offsets"), f"group-{client.name}"
    producer = client(txn_broker.bootstrap, f"{topic}-id")
    try:
        producer.begin()
        producer.send(topic, b"x")
        producer.send_offsets({(topic, 0): 7}, group)
        assert committed(txn_broker, group, topic) is None  # not before the commit
        producer.commit()
        assert committed(txn_broker, group, topic) == 7
        producer.begin()
        producer.send(topic, b"y")
        producer.send_offsets({(topic, 0): 9}, group)
        producer.abort()
    finally:
        producer.close()
    assert committed(txn_broker, group, topic) == 7


def committed(broker: ServedBroker, group: str, topic: str) -> int | None:
    """The group's committed offset as OffsetFetch without require_stable answers it (kafka-python's admin client;
    librdkafka asks with require_stable and would wait out a transaction still holding the offset)."""
    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        offsets = admin.list_group_offsets(group)
    finally:
        admin.close()
    found = offsets.get(group, {}).get(kafka.structs.TopicPartition(topic, 0))
    return None if found is None or found.offset < 0 else int(found.offset)


def send_and_commit(producer: TxnProducer, topic: str, value: bytes) -> None:
    producer.send(topic, value)
    producer.commit()


def _close_quietly(producer: TxnProducer) -> None:
    try:
        producer.close()
    except Exception:  # a fenced producer may refuse to close cleanly; the test is about what it did before
        pass


def test_hanging_transaction_found_and_aborted_with_the_admin_tools(txn_broker: ServedBroker) -> None:
    """What `kafka-transactions.sh find-hanging` and `abort` do, with kafka-python's admin client (KIP-664):
    ListTransactions, DescribeTransactions, DescribeProducers, then WriteTxnMarkers for the producer the partition
    reports. read_committed consumers then read past the aborted records."""
    from kafka.admin._transactions import AbortTransactionSpec

    topic = "txn-hanging"
    producer = TXN_CLIENTS[0](txn_broker.bootstrap, f"{topic}-producer")
    admin = kafka.KafkaAdminClient(bootstrap_servers=txn_broker.bootstrap)
    try:
        producer.begin()
        producer.send(topic, b"left-open")
        assert read_values("confluent", txn_broker.bootstrap, topic, "read_committed") == []
        listed = admin.list_transactions()
        ids = {t.transactional_id: t for listing in listed.values() for t in listing}
        assert ids[f"{topic}-producer"].state.value == "Ongoing"
        described = admin.describe_transactions([f"{topic}-producer"])[f"{topic}-producer"]
        partition = kafka.structs.TopicPartition(topic, 0)
        assert described.topic_partitions == {partition}
        (state,) = admin.describe_producers([partition])[partition].active_producers
        assert state.current_transaction_start_offset == 0
        assert state.producer_id == described.producer_id
        admin.abort_transaction(
            AbortTransactionSpec(partition, state.producer_id, state.producer_epoch, state.coordinator_epoch)
        )
        (state,) = admin.describe_producers([partition])[partition].active_producers
        assert state.current_transaction_start_offset == -1
        assert f"Wrote the abort marker of producer {described.producer_id}" in txn_broker.log()
        assert read_values("confluent", txn_broker.bootstrap, topic, "read_committed") == []
        # The coordinator still holds the transaction open: its commit now closes nothing in the partition (the
        # aborted records stay aborted), and the producer goes on with its next transaction.
        producer.commit()
        producer.begin()
        producer.send(topic, b"after")
        producer.commit()
        assert read_values("confluent", txn_broker.bootstrap, topic, "read_committed") == [b"after"]
        assert read_values("confluent", txn_broker.bootstrap, topic, "read_uncommitted") == [b"left-open", b"after"]
    finally:
        admin.close()
        producer.close()
