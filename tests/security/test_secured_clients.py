"""Every client library over SASL_SSL with SCRAM-SHA-512 and over SSL with a client certificate (mTLS): produce,
consume in a group, admin; wrong passwords and unknown users refused on every SASL mechanism."""

from __future__ import annotations

import shutil
import uuid

import pytest
from secured_broker import USERS, Secured
from secured_clients import CLIENTS, Credentials, Kcat, new_group

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]


def scram(secured: Secured, user: str = "alice", password: str | None = None, mechanism: str = "SCRAM-SHA-512"):
    return Credentials(
        "SASL_SSL", secured.pki.ca_file, mechanism, user, USERS.get(user, "x") if password is None else password
    )


def mtls(secured: Secured) -> Credentials:
    return Credentials("SSL", secured.pki.ca_file, cert_file=secured.client_cert, key_file=secured.client_key)


def _skip_without_kcat(client: type) -> None:
    if client is Kcat and shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (apt-get install kcat)")


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
@pytest.mark.parametrize("listener", ["SASL_SSL", "SSL"])
def test_produce_consume_in_a_group_and_admin(secured: Secured, client: type, listener: str) -> None:
    _skip_without_kcat(client)
    credentials = scram(secured) if listener == "SASL_SSL" else mtls(secured)
    c = client(secured.bootstrap(listener), credentials)
    topic = f"sec-{listener.lower()}-{c.name}-{uuid.uuid4().hex[:6]}"
    c.create_topic(topic)
    assert topic in c.topics()
    values = [f"{c.name}-{i}".encode() for i in range(10)]
    c.produce(topic, values)
    got = c.consume(topic, new_group(), len(values) + (1 if client is Kcat else 0))
    assert set(values) <= set(got)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_confluent_every_mechanism(secured: Secured, mechanism: str) -> None:
    c = CLIENTS[0](secured.bootstrap("SASL_SSL"), scram(secured, "bob", mechanism=mechanism))
    topic = f"mech-{mechanism.lower()}"
    c.produce(topic, [b"one", b"two"])
    assert c.consume(topic, new_group(), 2) == [b"one", b"two"]


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_wrong_password_and_unknown_user_are_refused(secured: Secured, client: type, user: str, password: str) -> None:
    _skip_without_kcat(client)
    message = client(secured.bootstrap("SASL_SSL"), scram(secured, user, password)).refusal()
    assert "uthentication" in message, message


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
def test_large_fetches_over_tls_take_the_copying_path_and_arrive_whole(secured: Secured, client: type) -> None:
    """Fetch answers of the file engine are sent with sendfile on plaintext listeners; TLS cannot, so the same answer
    is copied through the TLS transport. 40 values of 20 KiB make every answer large enough for a file range."""
    _skip_without_kcat(client)
    c = client(secured.bootstrap("SSL"), mtls(secured))
    topic = f"big-tls-{c.name}-{uuid.uuid4().hex[:6]}"
    c.create_topic(topic)
    values = [bytes([65 + i % 26]) * 20_000 + b"%d" % i for i in range(40)]
    c.produce(topic, values)
    got = c.consume(topic, new_group(), len(values) + (1 if client is Kcat else 0))
    assert set(values) <= set(got)
