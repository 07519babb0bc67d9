"""`kafkalite serve`'s flags, described back through DescribeConfigs' BROKER resource (kafka-python's admin client):
each flag is the Kafka setting it maps onto, reported as STATIC_BROKER_CONFIG."""

from __future__ import annotations

import kafka
import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from .conftest import Serve

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def test_serve_flags_are_the_brokers_settings(serve: Serve) -> None:
    served = serve("--fsync", "never", "--num-partitions", "3", "--no-auto-create-topics")
    admin = kafka.KafkaAdminClient(bootstrap_servers=served.bootstrap)
    try:
        resource = ConfigResource(ConfigResourceType.BROKER, "0")
        settings = admin.describe_configs([resource], config_filter="all")["broker"]["0"]
    finally:
        admin.close()
    described = {name: (entry["value"], entry["config_source"]) for name, entry in settings.items()}
    assert described["num.partitions"] == ("3", "STATIC_BROKER_CONFIG")
    assert described["kafkalite.fsync"] == ("never", "STATIC_BROKER_CONFIG")
    assert described["auto.create.topics.enable"] == ("false", "STATIC_BROKER_CONFIG")
    assert described["log.dirs"] == (str(served.data_dir), "STATIC_BROKER_CONFIG")
    assert described["listeners"] == (f"PLAINTEXT://127.0.0.1:{served.port}", "STATIC_BROKER_CONFIG")
    assert described["advertised.listeners"][0] == f"PLAINTEXT://{served.bootstrap}"
    assert described["node.id"] == ("0", "DEFAULT_CONFIG")
    assert described["log.retention.ms"] == ("604800000", "DEFAULT_CONFIG")
