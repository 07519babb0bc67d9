"""The listener and security settings are rows of the one broker settings table: DescribeConfigs on the BROKER
resource shows them with their values and sources (STATIC_BROKER_CONFIG when given, DEFAULT_CONFIG otherwise), and
never a password's value. Read through kafka-python's and confluent-kafka's admin clients."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import confluent_kafka.admin
import kafka
import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

GIVEN = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "super.users": "User:admin;User:ops",
    "connections.max.reauth.ms": "60000",
    "ssl.keystore.password": "keystore-secret",
    "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required password="jaas-secret";',
}


@pytest.fixture(scope="module")
def served() -> Iterator[ThreadedServer]:
    with run_in_thread(properties=GIVEN) as server:
        yield server


def test_kafka_python_sees_the_server_settings_with_their_sources(served: ThreadedServer) -> None:
    admin = kafka.KafkaAdminClient(bootstrap_servers=served.bootstrap)
    try:
        resource = ConfigResource(ConfigResourceType.BROKER, "0")
        settings = admin.describe_configs([resource], config_filter="all")["broker"]["0"]
    finally:
        admin.close()
    described = {name: (entry["value"], entry["config_source"]) for name, entry in settings.items()}
    bound = ",".join(f"{listener.name}://127.0.0.1:{port}" for listener, port in served.server.listeners)
    assert described["listeners"] == (bound, "STATIC_BROKER_CONFIG")  # as bound: port 0 resolved
    assert described["sasl.enabled.mechanisms"] == ("SCRAM-SHA-512", "STATIC_BROKER_CONFIG")
    assert described["super.users"] == ("User:admin;User:ops", "STATIC_BROKER_CONFIG")
    assert described["connections.max.reauth.ms"] == ("60000", "STATIC_BROKER_CONFIG")
    assert described["ssl.client.auth"] == ("none", "DEFAULT_CONFIG")
    assert described["allow.everyone.if.no.acl.found"] == ("false", "DEFAULT_CONFIG")
    assert described["listener.security.protocol.map"][1] == "DEFAULT_CONFIG"
    assert described["advertised.listeners"][0].startswith("PLAINTEXT://127.0.0.1:")  # the bound ports
    assert described["ssl.keystore.password"] == (None, "STATIC_BROKER_CONFIG")
    assert settings["ssl.keystore.password"]["is_sensitive"]
    assert settings["ssl.keystore.password"]["config_type"] == "PASSWORD"
    assert settings["sasl.enabled.mechanisms"]["config_type"] == "LIST"
    assert described["sasl.jaas.config"] == (None, "STATIC_BROKER_CONFIG")
    assert described["ssl.key.password"] == (None, "DEFAULT_CONFIG")
    assert "secret" not in repr(settings)


def test_confluent_kafka_sees_the_server_settings_and_no_secret(served: ThreadedServer) -> None:
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": served.bootstrap})
    resource = confluent_kafka.admin.ConfigResource(confluent_kafka.admin.ResourceType.BROKER, "0")
    entries: dict[str, Any] = admin.describe_configs([resource])[resource].result(30)
    source = confluent_kafka.admin.ConfigSource
    assert entries["sasl.enabled.mechanisms"].value == "SCRAM-SHA-512"
    assert entries["sasl.enabled.mechanisms"].source == source.STATIC_BROKER_CONFIG.value
    assert entries["ssl.client.auth"].value == "none"
    assert entries["ssl.client.auth"].source == source.DEFAULT_CONFIG.value
    assert entries["super.users"].source == source.STATIC_BROKER_CONFIG.value
    keystore = entries["ssl.keystore.password"]
    assert (keystore.value, keystore.is_sensitive) == (None, True)
    assert all("secret" not in str(entry.value) for entry in entries.values())


def test_the_shorthand_listener_is_described_as_bound() -> None:
    with run_in_thread() as server:
        admin = kafka.KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            resource = ConfigResource(ConfigResourceType.BROKER, "0")
            settings = admin.describe_configs([resource], config_filter="all")["broker"]["0"]
        finally:
            admin.close()
    assert settings["listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{server.port}"
    assert settings["sasl.enabled.mechanisms"]["config_source"] == "DEFAULT_CONFIG"
    assert settings["socket.request.max.bytes"]["config_source"] == "DEFAULT_CONFIG"
