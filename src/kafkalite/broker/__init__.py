"""The domain layer: topics, partitions, produce/fetch routing, committed offsets, dead letters. No sockets."""

from kafkalite.broker.broker import EARLIEST, LATEST, MAX_TIMESTAMP, Broker
from kafkalite.broker.dead_letter import DeadLetterQueue
from kafkalite.broker.dead_letter_format import DeadLetter, Replay, dead_letter_topic, retry_topic
from kafkalite.broker.fetch_data import FetchData
from kafkalite.broker.offsets import OFFSETS_TOPIC, CommittedOffset, OffsetManager
from kafkalite.broker.partition import Partition, ProduceResult
from kafkalite.broker.topic import Topic
from kafkalite.config import BrokerConfig, ConfigEntry, TopicConfig

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_TIMESTAMP",
    "OFFSETS_TOPIC",
    "Broker",
    "BrokerConfig",
    "CommittedOffset",
    "ConfigEntry",
    "DeadLetter",
    "DeadLetterQueue",
    "FetchData",
    "OffsetManager",
    "Partition",
    "ProduceResult",
    "Replay",
    "Topic",
    "TopicConfig",
    "dead_letter_topic",
    "retry_topic",
]
