"""The network client: `kafkalite.connect()` gives the embedded `Broker`'s interface over any Kafka cluster, built on
aiokafka (see `cluster`). Modules: `cluster` (connect, topics, settings), `producer`, `consumer`, `dead_letters`,
`kafka_errors` (aiokafka's exceptions as KafkaLite's)."""

from kafkalite.client.network.cluster import DEFAULT_BOOTSTRAP, Cluster, connect, parse_bootstrap
from kafkalite.client.network.consumer import NetworkConsumer
from kafkalite.client.network.dead_letters import NetworkDeadLetters
from kafkalite.client.network.producer import NetworkProducer

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "Cluster",
    "NetworkConsumer",
    "NetworkDeadLetters",
    "NetworkProducer",
    "connect",
    "parse_bootstrap",
]
