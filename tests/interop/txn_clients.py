"""One transactional-producer adapter and one isolation-aware reader per Kafka client, so every transaction scenario
runs the same steps with confluent-kafka, aiokafka and kafka-python. Synchronous: aiokafka runs on a loop of its
own per adapter. Every wait is bounded by `WAIT_S`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import aiokafka
import aiokafka.errors
import aiokafka.structs
import confluent_kafka
import kafka
import kafka.errors
import kafka.structs

from .clients import WAIT_S

Offsets = Mapping[tuple[str, int], int]


class TxnProducer:
    """begin / send / send_offsets / commit / abort / close, and `fenced(exc)` to recognise the fenced error."""

    name: ClassVar[str]

    def __init__(self, bootstrap: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        self.bootstrap = bootstrap
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms

    def begin(self) -> None: ...
    def send(self, topic: str, value: bytes, partition: int = 0) -> None: ...
    def send_offsets(self, offsets: Offsets, group: str) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...
    def close(self) -> None: ...

    @staticmethod
    def fenced(exc: BaseException) -> bool:
        raise NotImplementedError


class ConfluentTxn(TxnProducer):
    name = "confluent"

    def __init__(self, bootstrap: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        super().__init__(bootstrap, transactional_id, timeout_ms)
        self.producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": timeout_ms,
                "linger.ms": 5,
            }
        )
        self.producer.init_transactions(WAIT_S)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int = 0) -> None:
        self.producer.produce(topic, value, partition=partition)
        assert self.producer.flush(WAIT_S) == 0, "undelivered"  # sent like the other adapters: one at a time

    def send_offsets(self, offsets: Offsets, group: str) -> None:
        partitions = [confluent_kafka.TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        metadata = _confluent_group_metadata(self.bootstrap, group)
        self.producer.send_offsets_to_transaction(partitions, metadata, WAIT_S)

    def commit(self) -> None:
        self.producer.commit_transaction(WAIT_S)

    def abort(self) -> None:
        self.producer.abort_transaction(WAIT_S)

    def close(self) -> None:
        self.producer.flush(1)

    @staticmethod
    def fenced(exc: BaseException) -> bool:
        if not isinstance(exc, confluent_kafka.KafkaException):
            return False
        error = exc.args[0]
        codes = (
            confluent_kafka.KafkaError._FENCED,
            confluent_kafka.KafkaError.PRODUCER_FENCED,
            confluent_kafka.KafkaError.INVALID_PRODUCER_EPOCH,
        )
        return bool(error.code() in codes or error.fatal())


def _confluent_group_metadata(bootstrap: str, group: str) -> Any:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return consumer.consumer_group_metadata()
    finally:
        consumer.close()


class AiokafkaTxn(TxnProducer):
    name = "aiokafka"

    def __init__(self, bootstrap: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        super().__init__(bootstrap, transactional_id, timeout_ms)
        self.loop = asyncio.new_event_loop()
        self.producer = self.run(self._start())

    async def _start(self) -> aiokafka.AIOKafkaProducer:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self.timeout_ms,
            linger_ms=5,
        )
        await producer.start()
        return producer

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, WAIT_S))

    def begin(self) -> None:
        self.run(self.producer.begin_transaction())

    def send(self, topic: str, value: bytes, partition: int = 0) -> None:
        self.run(self.producer.send_and_wait(topic, value, partition=partition))

    def send_offsets(self, offsets: Offsets, group: str) -> None:
        commits = {aiokafka.structs.TopicPartition(t, p): o for (t, p), o in offsets.items()}
        self.run(self.producer.send_offsets_to_transaction(commits, group))

    def commit(self) -> None:
        self.run(self.producer.commit_transaction())

    def abort(self) -> None:
        self.run(self.producer.abort_transaction())

    def close(self) -> None:
        try:
            self.run(self.producer.stop())
        finally:
            self.loop.close()

    @staticmethod
    def fenced(exc: BaseException) -> bool:
        return isinstance(exc, aiokafka.errors.ProducerFenced | aiokafka.errors.InvalidProducerEpoch)


class KafkaPythonTxn(TxnProducer):
    name = "kafka-python"

    def __init__(self, bootstrap: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        super().__init__(bootstrap, transactional_id, timeout_ms)
        self.producer = kafka.KafkaProducer(
            bootstrap_servers=bootstrap,
            transactional_id=transactional_id,
            transaction_timeout_ms=timeout_ms,
            linger_ms=5,
        )
        self.producer.init_transactions()

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int = 0) -> None:
        self.producer.send(topic, value, partition=partition).get(WAIT_S)

    def send_offsets(self, offsets: Offsets, group: str) -> None:
        commits = {
            kafka.structs.TopicPartition(t, p): kafka.structs.OffsetAndMetadata(o, "", -1)
            for (t, p), o in offsets.items()
        }
        self.producer.send_offsets_to_transaction(commits, group)

    def commit(self) -> None:
        self.producer.commit_transaction()

    def abort(self) -> None:
        self.producer.abort_transaction()

    def close(self) -> None:
        self.producer.close(timeout=2)

    @staticmethod
    def fenced(exc: BaseException) -> bool:
        return isinstance(exc, kafka.errors.ProducerFencedError | kafka.errors.InvalidProducerEpochError)


TXN_CLIENTS: list[type[TxnProducer]] = [ConfluentTxn, AiokafkaTxn, KafkaPythonTxn]


IDLE_S = 1.5  # the data is written before a read starts: this long without a new message means the end was reached


def read_values(client: str, bootstrap: str, topic: str, isolation: str, partitions: int = 1) -> list[bytes]:
    """Every value of `topic` a consumer of `client` with `isolation` reads from the beginning, by partition and
    offset. (Positions cannot tell the end: a client's position stops before trailing markers.)"""
    got: dict[tuple[int, int], bytes] = {}
    idle = _Idle()
    if client == "confluent":
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"r-{time.monotonic_ns()}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
            }
        )
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
        while not idle.done():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got[(message.partition(), message.offset())] = message.value()
                idle.saw()
        consumer.close()
    elif client == "aiokafka":

        async def read() -> None:
            consumer = aiokafka.AIOKafkaConsumer(
                bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False
            )
            await consumer.start()
            try:
                tps = [aiokafka.structs.TopicPartition(topic, p) for p in range(partitions)]
                consumer.assign(tps)
                for tp in tps:
                    consumer.seek(tp, 0)
                while not idle.done():
                    for tp, messages in (await consumer.getmany(timeout_ms=100)).items():
                        for m in messages:
                            got[(tp.partition, m.offset)] = m.value
                            idle.saw()
            finally:
                await consumer.stop()

        asyncio.run(read())
    else:
        consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False)
        tps = [kafka.structs.TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        while not idle.done():
            for tp, messages in consumer.poll(100).items():
                for m in messages:
                    got[(tp.partition, m.offset)] = m.value
                    idle.saw()
        consumer.close()
    return [value for _, value in sorted(got.items())]


class _Idle:
    def __init__(self) -> None:
        self.deadline = time.monotonic() + WAIT_S
        self.last = time.monotonic()

    def saw(self) -> None:
        self.last = time.monotonic()

    def done(self) -> bool:
        now = time.monotonic()
        return now - self.last >= IDLE_S or now > self.deadline
