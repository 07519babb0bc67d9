"""A broker served on PLAINTEXT, SASL_SSL (SCRAM and PLAIN), SASL_PLAINTEXT and SSL-with-client-certificates
listeners at once, each on a free port, over a data directory with SASL users."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from certs import Pki

from kafkalite.security.credentials import CredentialStore
from kafkalite.server import ThreadedServer, run_in_thread
from kafkalite.server.properties import ServeSettings, load

USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}


@dataclass(frozen=True)
class Secured:
    server: ThreadedServer
    pki: Pki
    data_dir: Path
    server_pem: Path
    client_cert: Path
    client_key: Path

    def bootstrap(self, listener: str) -> str:
        return self.server.server.bootstrap_of(listener)


def secured_settings(data_dir: Path, server_pem: Path, ca_file: Path, **extra: str) -> ServeSettings:
    return load(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "log.dirs": str(data_dir),
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
            "ssl.keystore.location": str(server_pem),
            "ssl.truststore.location": str(ca_file),
            "listener.name.ssl.ssl.client.auth": "required",
            "group.initial.rebalance.delay.ms": "0",
            "connection.failed.authentication.delay.ms": "50",
            **extra,
        }
    )


def add_users(data_dir: Path) -> None:
    store = CredentialStore(data_dir, fsync=False)
    for user, password in USERS.items():
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"):
            store.set_password(user, mechanism, password)


@contextmanager
def secured_broker(pki: Pki, data_dir: Path, **extra: str) -> Iterator[Secured]:
    """A served broker over `data_dir` with every listener kind; users from `USERS` are added first."""
    _, _, server_pem = pki.issue("localhost", server=True)
    client_cert, client_key, _ = pki.issue("client", server=False)
    add_users(data_dir)
    settings = secured_settings(data_dir, server_pem, pki.ca_file, **extra)
    options = {"listeners": settings.listeners, "security_settings": settings.security}
    with run_in_thread(config=settings.broker, server_options=options) as server:
        yield Secured(server, pki, data_dir, server_pem, client_cert, client_key)
