"""KafkaLite: a Kafka-compatible event-log broker in Python.

Embedded::

    async with kafkalite.Broker(data_dir="./app-data") as broker:  # data_dir=None: in memory
        await broker.create_topic("orders", partitions=3)
        async with broker.producer() as producer:
            meta = await producer.send("orders", b"payload", key=b"user-1")
        async with broker.consumer("orders", group_id="billing") as consumer:
            async for message in consumer: ...
        async with broker.producer(transactional_id="app") as producer:   # exactly once
            async with producer.transaction():                         # commit, or abort on an exception
                await producer.send("orders", b"payload")

Any Kafka cluster (KafkaLite served, Apache Kafka, ...), same code::

    async with kafkalite.connect("localhost:9092") as broker: ...

Served: `kafkalite serve` speaks the Kafka wire protocol (see `kafkalite.server`).
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from kafkalite import errors
    from kafkalite.broker import BrokerConfig, DeadLetter
    from kafkalite.client import Broker, Consumer, Message, Producer, RecordMetadata, TransactionalProducer
    from kafkalite.client.network import Cluster, connect
    from kafkalite.errors import KafkaLiteError
    from kafkalite.logs import configure_logging

# Public name -> the module it lives in. Imported on first access (PEP 562), so `import kafkalite.cli` or
# `import kafkalite.protocol.records` does not pay for the whole embedded API (start-up time of `kafkalite serve`).
_HOME = {
    "Broker": "kafkalite.client",
    "BrokerConfig": "kafkalite.broker",
    "Cluster": "kafkalite.client.network",
    "Consumer": "kafkalite.client",
    "DeadLetter": "kafkalite.broker",
    "KafkaLiteError": "kafkalite.errors",
    "Message": "kafkalite.client",
    "Producer": "kafkalite.client",
    "RecordMetadata": "kafkalite.client",
    "TransactionalProducer": "kafkalite.client",
    "configure_logging": "kafkalite.logs",
    "connect": "kafkalite.client.network",
}

__all__ = [
    "Broker",
    "BrokerConfig",
    "Cluster",
    "Consumer",
    "DeadLetter",
    "KafkaLiteError",
    "Message",
    "Producer",
    "RecordMetadata",
    "TransactionalProducer",
    "configure_logging",
    "connect",
    "errors",
]


def __getattr__(name: str) -> object:
    if name == "errors":
        return _importlib.import_module("kafkalite.errors")
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
