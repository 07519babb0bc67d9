"""Every broker and topic setting under its Kafka name: the one table that validates and describes them.

- `schema`: Kafka's config types and sources, the validators, and `Setting` (one row of a table).
- `topic`: `TOPIC_SETTINGS` (every topic config Kafka defines) and `TopicConfig` (one topic's values).
- `broker`: `BROKER_SETTINGS`, `BrokerConfig`, `load_properties` (`key=value` → `BrokerConfig`) and
  `describe_broker`.
- `server_settings`: the table's rows for the running server (listeners, TLS, SASL, authorizer, limits).

A leaf package: it imports nothing of KafkaLite's but `kafkalite.errors`, so the broker, the server and the CLI
can all read it.
"""

from kafkalite.config.broker import (
    BROKER_SETTINGS,
    BrokerConfig,
    BrokerKey,
    broker_setting,
    check_broker_config,
    describe_broker,
    load_properties,
)
from kafkalite.config.schema import ConfigSource, ConfigType, Setting
from kafkalite.config.topic import (
    BROKER_SYNONYMS,
    TOPIC_SETTINGS,
    ConfigEntry,
    ConfigSynonym,
    TopicConfig,
    topic_setting,
    validate_config,
)

__all__ = [
    "BROKER_SETTINGS",
    "BROKER_SYNONYMS",
    "TOPIC_SETTINGS",
    "BrokerConfig",
    "BrokerKey",
    "ConfigEntry",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "Setting",
    "TopicConfig",
    "broker_setting",
    "check_broker_config",
    "describe_broker",
    "load_properties",
    "topic_setting",
    "validate_config",
]
