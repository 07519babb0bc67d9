"""KafkaLite: a Kafka-compatible event-log broker in Python.

Embedded::

    async with kafkalite.Broker(data_dir="./data") as broker:      # data_dir=None: in memory
        await broker.create_topic("orders", partitions=3)
        async with broker.producer() as producer:
            meta = await producer.send("orders", b"payload", key=b"user-1")
        async with broker.consumer("orders", group_id="billing") as consumer:
            async for message in consumer: ...

Served: `kafkalite serve` speaks the Kafka wire protocol (see `kafkalite.server`).
"""

from kafkalite import errors
from kafkalite.broker import BrokerConfig, DeadLetter
from kafkalite.client import Broker, Consumer, Message, Producer, RecordMetadata
from kafkalite.errors import KafkaLiteError
from kafkalite.logs import configure_logging

__all__ = [
    "Broker",
    "BrokerConfig",
    "Consumer",
    "DeadLetter",
    "KafkaLiteError",
    "Message",
    "Producer",
    "RecordMetadata",
    "configure_logging",
    "errors",
]
