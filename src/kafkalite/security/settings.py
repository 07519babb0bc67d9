"""What a listener and the broker's security need to know, under Kafka's names; plain frozen data, no I/O.

`SecurityProtocol` is Kafka's four listener protocols. A `Listener` is one bound address with its protocol and the
address clients are told (advertised). `TlsSettings` are the `ssl.*` keys of a listener (PEM files only), and
`SecuritySettings` the broker-wide keys: SASL mechanisms, the authorizer switch, super users and the limits.

Invariants: a listener whose protocol uses TLS has `tls` set; a SASL listener has at least one enabled mechanism
(checked by the loader that builds these, `server.properties`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class SecurityProtocol(enum.StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


class ClientAuth(enum.StrEnum):
    """`ssl.client.auth`: whether a TLS client must present a certificate."""

    NONE = "none"
    REQUESTED = "requested"
    REQUIRED = "required"


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """A TLS listener's `ssl.*` settings. Keystore: the server's certificate chain and key (one PEM file, or the
    certificate in `ssl.keystore.certificate.chain` files); truststore: the CA certificates client certificates are
    checked against."""

    keystore_location: str
    key_password: str | None = None
    truststore_location: str | None = None
    client_auth: ClientAuth = ClientAuth.NONE
    protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    cipher_suites: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Listener:
    """One address the server binds; `advertised_*` is what Metadata and FindCoordinator tell clients."""

    name: str
    protocol: SecurityProtocol
    host: str
    port: int
    advertised_host: str | None = None
    advertised_port: int | None = None
    tls: TlsSettings | None = None


DEFAULT_SASL_MECHANISMS = ("GSSAPI",)  # Kafka's default for sasl.enabled.mechanisms; KafkaLite serves no GSSAPI
SUPPORTED_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    """Broker-wide security: who may authenticate how, who is allowed what, and connection limits."""

    sasl_mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    authorizer_enabled: bool = False  # authorizer.class.name set: every request is checked against the ACLs
    super_users: frozenset[str] = frozenset()  # principals ("User:alice") every check allows
    allow_everyone_if_no_acl_found: bool = False
    failed_authentication_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    reauthentication_ms: int = 0  # connections.max.reauth.ms (KIP-368); 0: sessions never expire
    connections_max_idle_ms: int = 600_000
    max_connections: int = 2**31 - 1
    max_connections_per_ip: int = 2**31 - 1
    max_connections_per_ip_overrides: dict[str, int] = field(default_factory=dict)
    sasl_max_receive_bytes: int = 524_288  # sasl.server.max.receive.size: cap on frames before authentication
