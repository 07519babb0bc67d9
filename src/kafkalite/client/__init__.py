"""The Python API: the embedded `Broker`, `Producer`, `Consumer`, and the transports they talk through."""

from kafkalite.client.consumer import Consumer
from kafkalite.client.embedded import Broker
from kafkalite.client.partitioners import Partitioner, md5_hash, murmur2
from kafkalite.client.producer import Producer
from kafkalite.client.records import Message, RecordMetadata
from kafkalite.client.transactional import TransactionalProducer
from kafkalite.client.transport import EmbeddedTransport, Transport

__all__ = [
    "Broker",
    "Consumer",
    "EmbeddedTransport",
    "Message",
    "Partitioner",
    "Producer",
    "RecordMetadata",
    "TransactionalProducer",
    "Transport",
    "md5_hash",
    "murmur2",
]
