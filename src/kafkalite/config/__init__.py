"""Every broker and topic setting under its Kafka name: the one table that validates and describes them.

A leaf package: it imports nothing of KafkaLite's but `kafkalite.errors`, so the broker, the server and the CLI
can all read it.
"""

from kafkalite.config.broker import BrokerConfig
from kafkalite.config.topic import TOPIC_CONFIG_KEYS, ConfigEntry, ConfigKey, TopicConfig, validate_config

__all__ = ["TOPIC_CONFIG_KEYS", "BrokerConfig", "ConfigEntry", "ConfigKey", "TopicConfig", "validate_config"]
