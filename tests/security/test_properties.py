"""server.properties and --override: Kafka's names, Kafka's synonyms and precedence, and refusals naming the key."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite.config import BROKER_SETTINGS, TOPIC_SETTINGS, ConfigType
from kafkalite.errors import InvalidConfigError
from kafkalite.security.settings import ClientAuth, SecurityProtocol
from kafkalite.server.properties import load, parse_override, read_properties


def test_reads_java_properties(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\n\nnum.partitions=3\nlog.dirs : /tmp/kl\n"
        "listeners=PLAINTEXT://127.0.0.1:0,\\\n    SSL://127.0.0.1:0\nsuper.users = User:admin;User:ops \n"
    )
    assert read_properties(path) == {
        "num.partitions": "3",
        "log.dirs": "/tmp/kl",
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "super.users": "User:admin;User:ops",
    }


def test_a_missing_file_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match=r"nope\.properties"):
        read_properties(tmp_path / "nope.properties")


@pytest.mark.parametrize("key", ["num.partition", "listener", "ssl.keystore.locaton", "listener.name.x.num.partitions"])
def test_unknown_keys_are_refused_naming_the_key(key: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"Unknown broker config name: {re.escape(key)}$"):
        load({key: "1"})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("num.partitions", "three"),
        ("auto.create.topics.enable", "yes"),
        ("ssl.client.auth", "sometimes"),
        ("num.partitions", "0"),
        ("log.dirs", "/a,/b"),
        ("ssl.keystore.type", "JKS"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(InvalidConfigError, match=key.replace(".", r"\.")):
        load({key: value})


def test_kafka_names_reach_the_broker_config() -> None:
    settings = load(
        {
            "log.dirs": "/tmp/kl-data",
            "num.partitions": "4",
            "auto.create.topics.enable": "false",
            "group.min.session.timeout.ms": "1000",
            "group.max.session.timeout.ms": "60000",
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "2",
            "log.retention.hours": "1",
            "log.segment.bytes": "1048576",
            "node.id": "7",
            "process.roles": "broker,controller",  # a cluster key: accepted, no effect
        }
    )
    broker = settings.broker
    assert broker.data_dir == Path("/tmp/kl-data")
    assert (broker.default_partitions, broker.auto_create_topics, broker.node_id) == (4, False, 7)
    assert (broker.group_min_session_timeout_ms, broker.group_max_session_timeout_ms) == (1000, 60000)
    assert broker.offsets_partitions == 2
    assert broker.topic_defaults == {"retention.ms": "3600000", "segment.bytes": "1048576"}


def test_retention_precedence_is_kafkas() -> None:
    both = load({"log.retention.ms": "5", "log.retention.minutes": "1", "log.retention.hours": "1"})
    assert both.broker.topic_defaults["retention.ms"] == "5"
    minutes = load({"log.retention.minutes": "2", "log.retention.hours": "1"})
    assert minutes.broker.topic_defaults["retention.ms"] == "120000"


def test_log_synonyms_name_real_topic_configs() -> None:
    assert set(load({"log.cleanup.policy": "delete"}).broker.topic_defaults) <= set(TOPIC_SETTINGS)


def test_several_listeners_with_a_protocol_map_and_per_listener_tls(tmp_path: Path) -> None:
    settings = load(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://[::1]:0,SECURE://:0",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,SECURE:SSL",
            "advertised.listeners": "SECURE://broker.example:9093",
            "ssl.keystore.location": "/etc/kl/server.pem",
            "listener.name.secure.ssl.client.auth": "required",
            "listener.name.secure.ssl.truststore.location": "/etc/kl/ca.pem",
        }
    )
    plain, client, secure = settings.listeners
    assert (plain.protocol, plain.host, plain.tls) == (SecurityProtocol.PLAINTEXT, "127.0.0.1", None)
    assert (client.protocol, client.host) == (SecurityProtocol.SASL_PLAINTEXT, "::1")
    assert secure.protocol is SecurityProtocol.SSL
    assert (secure.host, secure.advertised_host, secure.advertised_port) == ("", "broker.example", 9093)
    assert secure.tls is not None
    assert secure.tls.client_auth is ClientAuth.REQUIRED
    assert secure.tls.truststore_location == "/etc/kl/ca.pem"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"listeners": "PLAINTEXT//127.0.0.1:9092"}, "not NAME://host:port"),
        ({"listeners": "CLIENT://:0"}, "no security protocol for listener CLIENT"),
        ({"listeners": "SSL://:0"}, "ssl.keystore.location is not set"),
        ({"listeners": "PLAINTEXT://:9092,SSL://:9092", "ssl.keystore.location": "x"}, "two listeners on one port"),
        ({"listeners": "PLAINTEXT://:0,PLAINTEXT://:1"}, "appears more than once"),
        ({"advertised.listeners": "SSL://h:1"}, "SSL is not one of the listeners"),
        ({"listener.security.protocol.map": "X:TLS"}, "not a security protocol"),
        ({"listeners": "SASL_PLAINTEXT://:0", "sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI not served"),
        ({"super.users": "alice"}, "not a principal"),
        ({"ssl.enabled.protocols": "TLSv1.1", "listeners": "SSL://:0", "ssl.keystore.location": "x"}, "TLSv1.1"),
        ({"group.min.session.timeout.ms": "9000", "group.max.session.timeout.ms": "8000"}, "above"),
    ],
)
def test_listener_and_security_mistakes_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        load(settings)


def test_security_settings() -> None:
    security = load(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:CN=ops,O=Example",
            "allow.everyone.if.no.acl.found": "true",
            "max.connections.per.ip.overrides": "127.0.0.1:5,10.0.0.1:1",
            "connections.max.reauth.ms": "60000",
        }
    ).security
    assert security.authorizer_enabled
    assert security.super_users == {"User:admin", "User:CN=ops,O=Example"}
    assert security.allow_everyone_if_no_acl_found
    assert security.max_connections_per_ip_overrides == {"127.0.0.1": 5, "10.0.0.1": 1}
    assert security.reauthentication_ms == 60000


def test_every_server_key_is_a_row_of_the_broker_table_and_passwords_are_sensitive() -> None:
    server = {name: key.setting for name, key in BROKER_SETTINGS.items() if key.server}
    assert {"listeners", "ssl.client.auth", "sasl.enabled.mechanisms", "super.users", "max.connections"} <= set(server)
    for name, setting in server.items():
        assert setting.doc, name
        assert setting.sensitive == (setting.type is ConfigType.PASSWORD), name
    assert {name for name, setting in server.items() if setting.sensitive} == {
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.password",
        "sasl.jaas.config",
    }


def test_override_syntax() -> None:
    assert parse_override("a.b=c=d") == ("a.b", "c=d")
    with pytest.raises(InvalidConfigError, match="expected key=value"):
        parse_override("novalue")


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kafkalite.cli", "serve", "--data-dir", "memory", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_serve_refuses_an_unknown_override_naming_it() -> None:
    done = _serve("--override", "num.partitons=3")
    assert done.returncode == 2
    assert done.stderr.strip() == "kafkalite: Unknown broker config name: num.partitons"


def test_serve_refuses_listeners_and_port_together(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://127.0.0.1:0\n")
    done = _serve("--config", str(config), "--port", "0")
    assert done.returncode == 2
    assert "two ways to say one thing" in done.stderr


def test_log_cleaner_settings_reach_the_broker() -> None:
    broker = load(
        {
            "log.cleaner.enable": "false",
            "log.cleaner.backoff.ms": "500",
            "log.cleaner.io.max.bytes.per.second": "1048576",
            "offsets.topic.segment.bytes": "1048576",
        }
    ).broker
    assert (broker.log_cleaner_enable, broker.log_cleaner_backoff_s) == (False, 0.5)
    assert (broker.log_cleaner_io_max_bytes_per_second, broker.offsets_segment_bytes) == (1048576.0, 1048576)
