"""The commands a user runs: `kafkalite users` (offline SASL credentials) and `kafkalite serve --config` with TLS,
SCRAM users and ACLs, driven as subprocesses with a real client."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from certs import Pki

from interop.served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def kafkalite(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkalite.cli", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def test_users_set_list_delete(tmp_path: Path) -> None:
    data = str(tmp_path)
    assert kafkalite("users", "set", "alice", "--password-stdin", "--data-dir", data, stdin="s3cret\n").returncode == 0
    done = kafkalite(
        "users", "set", "bob", "--mechanism", "plain", "--password-stdin", "--data-dir", data, stdin="pw\n"
    )
    assert done.returncode == 0
    assert done.stdout.strip() == "PLAIN credential set for user bob"
    listed = kafkalite("users", "list", "--data-dir", data).stdout.splitlines()
    assert listed == ["alice\tSCRAM-SHA-512 (iterations=4096)", "bob\tPLAIN (iterations=4096)"]
    stored = (tmp_path / "_kafkalite" / "security" / "credentials.json").read_text()
    assert "s3cret" not in stored
    assert "pw" not in json.loads(stored)["users"]["bob"]["PLAIN"].values()
    assert (tmp_path / "_kafkalite" / "security" / "credentials.json").stat().st_mode & 0o077 == 0
    assert kafkalite("users", "delete", "alice", "--data-dir", data).returncode == 0
    missing = kafkalite("users", "delete", "alice", "--data-dir", data)
    assert (missing.returncode, missing.stderr.strip()) == (2, "kafkalite: no credentials for user 'alice'")
    weak = kafkalite("users", "set", "carol", "--iterations", "100", "--password-stdin", "--data-dir", data, stdin="x")
    assert weak.returncode == 2
    empty = kafkalite("users", "set", "dave", "--password-stdin", "--data-dir", data, stdin="\n")
    assert (empty.returncode, empty.stderr.strip()) == (2, "kafkalite: empty password")


def test_users_are_not_edited_under_a_running_broker(tmp_path: Path) -> None:
    """That broker keeps its own copy of the users and would write over the edit: `set` and `delete` are refused
    while it holds the data directory, and work again once it has stopped."""
    data = tmp_path / "data"
    assert kafkalite("users", "set", "alice", "--password-stdin", "--data-dir", str(data), stdin="a\n").returncode == 0
    broker = ServedBroker(data, tmp_path / "serve.log", "--fsync", "never")
    broker.start()
    try:
        assert broker.process is not None
        refused = kafkalite("users", "set", "bob", "--password-stdin", "--data-dir", str(data), stdin="b\n")
        assert (refused.returncode, refused.stderr.strip()) == (
            2,
            f"kafkalite: data directory {data} is in use by another broker (process {broker.process.pid}); stop it "
            "first, or use another directory; a running broker takes user changes through AlterUserScramCredentials",
        )
        assert kafkalite("users", "delete", "alice", "--data-dir", str(data)).returncode == 2
        assert kafkalite("users", "list", "--data-dir", str(data)).stdout.startswith("alice\t")  # reading is fine
    finally:
        assert broker.stop() == 0
    assert kafkalite("users", "set", "bob", "--password-stdin", "--data-dir", str(data), stdin="b\n").returncode == 0


@pytest.fixture
def served(pki: Pki, tmp_path: Path) -> Iterator[dict[str, str]]:
    """`kafkalite serve --config` with PLAINTEXT and SASL_SSL listeners, SCRAM users and the authorizer on."""
    _, _, server_pem = pki.issue("localhost", server=True)
    data = tmp_path / "data"
    for user in ("admin", "alice"):
        kafkalite("users", "set", user, "--password-stdin", "--data-dir", str(data), stdin=f"{user}-pw\n")
    config = tmp_path / "server.properties"
    config.write_text(
        f"""# as in the README
listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0
log.dirs={data}
ssl.keystore.type=PEM
ssl.keystore.location={server_pem}
sasl.enabled.mechanisms=SCRAM-SHA-512
authorizer.class.name=kafkalite
super.users=User:admin
group.min.session.timeout.ms=1000
"""
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkalite.cli", "serve", "--config", str(config), "--fsync", "never", "--no-http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    ready = process.stdout.readline()
    assert ready.startswith("KafkaLite ready on 127.0.0.1:"), ready
    listeners = {}
    for _ in range(2):
        _, _, name, _, address = process.stdout.readline().split()
        listeners[name] = address
    listeners["ca"] = str(pki.ca_file)
    yield listeners
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0


def _config(served: dict[str, str], user: str) -> dict[str, str]:
    return {
        "bootstrap.servers": served["SASL_SSL"],
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": f"{user}-pw",
        "ssl.ca.location": served["ca"],
        "message.timeout.ms": "10000",
    }


def _produce(config: dict[str, str]) -> int | None:
    producer = confluent_kafka.Producer(config)
    outcome: list[confluent_kafka.KafkaError | None] = []
    producer.produce("served", b"v", on_delivery=lambda e, _m: outcome.append(e))
    producer.flush(30)
    return None if outcome[0] is None else int(outcome[0].code())


def test_serve_config_with_tls_scram_users_and_acls(served: dict[str, str]) -> None:
    assert _produce(_config(served, "admin")) is None
    assert _produce(_config(served, "alice")) == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    anonymous = {"bootstrap.servers": served["PLAINTEXT"], "message.timeout.ms": "10000"}
    assert _produce(anonymous) == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
