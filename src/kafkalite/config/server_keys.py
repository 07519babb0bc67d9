"""The listener and security keys `kafkalite serve` accepts, under Kafka's names: type, default, parser, what it does.

`SERVE_KEYS` holds what configures listeners, TLS, SASL, the authorizer and connection limits; every other broker key
is in `config.broker`'s `BROKER_SETTINGS`. `server.properties` reads the first kind against this table and hands
the rest to `load_properties`, so a typo in either never silently means "default". Keys a single broker accepts
only for compatibility are marked `honoured=False`; where KafkaLite's default differs from Kafka's, the doc says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

_INT_MAX = 2**31 - 1


def _int(value: str) -> int:
    return int(value.strip())


def parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("must be true or false")
    return lowered == "true"


def parse_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _string(value: str) -> str:
    return value.strip()


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        lowered = value.strip().lower()
        for choice in choices:
            if choice.lower() == lowered:
                return choice
        raise ValueError(f"must be one of {', '.join(choices)}")

    return parse


@dataclass(frozen=True, slots=True)
class ServeKey:
    """One accepted key: `parse` checks the value (ValueError = refused); `honoured` is False for keys accepted only
    so that a cluster's server.properties starts (they change nothing on one broker)."""

    type: str
    default: str | None
    parse: Callable[[str], object]
    doc: str
    honoured: bool = True


_NO_EFFECT = "accepted for compatibility: a single broker has no use for it"

SERVE_KEYS: dict[str, ServeKey] = {
    # Listeners and the network.
    "listeners": ServeKey("list", "PLAINTEXT://:9092", _string, "the addresses to bind, NAME://host:port,..."),
    "advertised.listeners": ServeKey("list", None, _string, "addresses told to clients, per listener name"),
    "listener.security.protocol.map": ServeKey(
        "list",
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        _string,
        "security protocol of each listener name",
    ),
    "socket.request.max.bytes": ServeKey("int", str(100 * 1024 * 1024), _int, "largest request frame accepted"),
    "connections.max.idle.ms": ServeKey("long", "600000", _int, "close connections idle this long"),
    "max.connections": ServeKey("int", str(_INT_MAX), _int, "connections accepted at once, all listeners together"),
    "max.connections.per.ip": ServeKey("int", str(_INT_MAX), _int, "connections accepted at once from one address"),
    "max.connections.per.ip.overrides": ServeKey("string", "", _string, "per-address limits, host:count,..."),
    # Storage and topic defaults.
    # Groups.
    # TLS (per listener with the listener.name.<name>. prefix).
    "ssl.keystore.type": ServeKey("string", "PEM", _one_of("PEM"), "PEM only: certificate chain and private key"),
    "ssl.keystore.location": ServeKey("string", None, _string, "PEM file with the certificate chain and private key"),
    "ssl.keystore.password": ServeKey("password", None, _string, "password of an encrypted private key"),
    "ssl.key.password": ServeKey("password", None, _string, "password of an encrypted private key"),
    "ssl.truststore.type": ServeKey("string", "PEM", _one_of("PEM"), "PEM only: CA certificates"),
    "ssl.truststore.location": ServeKey(
        "string", None, _string, "PEM file of CAs that client certificates must chain to"
    ),
    "ssl.truststore.password": ServeKey(
        "password", None, _string, _NO_EFFECT + " (PEM truststores have none)", honoured=False
    ),
    "ssl.client.auth": ServeKey(
        "string", "none", _one_of("none", "requested", "required"), "mTLS: ask for a client cert"
    ),
    "ssl.enabled.protocols": ServeKey("list", "TLSv1.2,TLSv1.3", parse_list, "TLS versions offered (1.2 and 1.3 only)"),
    "ssl.protocol": ServeKey(
        "string", "TLSv1.3", _string, _NO_EFFECT + " (ssl.enabled.protocols decides)", honoured=False
    ),
    "ssl.cipher.suites": ServeKey(
        "list", "", parse_list, "OpenSSL cipher names for TLS 1.2; empty: OpenSSL's defaults"
    ),
    "ssl.endpoint.identification.algorithm": ServeKey("string", "https", _string, _NO_EFFECT, honoured=False),
    "ssl.principal.mapping.rules": ServeKey("string", "DEFAULT", _one_of("DEFAULT"), "certificate subject → principal"),
    # SASL.
    "sasl.enabled.mechanisms": ServeKey(
        "list",
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        parse_list,
        "mechanisms SASL listeners offer (Kafka's default: GSSAPI)",
    ),
    "sasl.mechanism.inter.broker.protocol": ServeKey("string", "GSSAPI", _string, _NO_EFFECT, honoured=False),
    "connections.max.reauth.ms": ServeKey("long", "0", _int, "session lifetime after SASL authentication (KIP-368)"),
    "connection.failed.authentication.delay.ms": ServeKey("int", "100", _int, "wait before answering a failed login"),
    "sasl.server.max.receive.size": ServeKey("int", "524288", _int, "largest frame before authentication"),
    # Authorization.
    "authorizer.class.name": ServeKey("string", "", _string, "any value turns ACL checks on"),
    "super.users": ServeKey("list", "", _string, "principals allowed everything, User:a;User:b"),
    "allow.everyone.if.no.acl.found": ServeKey(
        "boolean", "false", parse_bool, "allow a resource that has no ACL at all"
    ),
    # Cluster keys a single broker has no use for.
}
