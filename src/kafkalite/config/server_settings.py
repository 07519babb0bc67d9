"""The server's rows of the broker settings table: listeners, TLS, SASL, the authorizer and connection limits.

These are `Setting` rows like every other broker setting (`config.broker` folds them into `BROKER_SETTINGS` as
server settings), so `server.properties` and `--override` check them with the same rules and messages, and
DescribeConfigs on the BROKER resource describes them with their type, default, documentation and source. Their
values live in the server (`server.properties.ServeSettings.server_settings`), which supplies them when the broker is
described. Passwords (`ssl.keystore.password`, `ssl.key.password`, `ssl.truststore.password`, `sasl.jaas.config`)
are `sensitive`: DescribeConfigs answers them with a null value, as Kafka does.

`listener.name.<listener>.ssl.*` keys set one listener's TLS keys; they are checked against the `ssl.*` row of the
same name (`per_listener_setting`). Keys a single broker accepts only for compatibility are `honoured=False`; where
KafkaLite's default differs from Kafka's, the note says so.
"""

from __future__ import annotations

import re
from typing import Any

from kafkalite.config.schema import INT32_MAX, ConfigType, Setting, at_least, one_of

_S, _I, _L, _B = ConfigType.STRING, ConfigType.INT, ConfigType.LONG, ConfigType.BOOLEAN
_LIST, _PASSWORD = ConfigType.LIST, ConfigType.PASSWORD
_LISTENER_PREFIX = re.compile(r"^listener\.name\.(?P<listener>[a-z0-9_-]+)\.(?P<key>ssl\..+)$")


def _one_of_any_case(*choices: str) -> Any:
    """Kafka reads `ssl.client.auth` without regard to case."""
    check = one_of(*choices)

    def validate(value: Any) -> None:
        check(value.lower())

    return validate


def _tls_versions(value: Any) -> None:
    refused = [v for v in value if v not in ("TLSv1.2", "TLSv1.3")]
    if refused or not value:
        raise ValueError(f"{', '.join(refused) or 'none'} refused: KafkaLite serves TLSv1.2 and TLSv1.3")


SERVER_SETTINGS: tuple[Setting, ...] = (
    # Listeners and the network.
    Setting("listeners", _S, "PLAINTEXT://:9092", "The addresses the broker listens on, as listener://host:port.",
            read_only=True),
    Setting("advertised.listeners", _S, None,
            "The addresses clients are told to connect to (Metadata, FindCoordinator).", read_only=True),
    Setting("listener.security.protocol.map", _S,
            "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "The security protocol of each listener name.", read_only=True),
    Setting("socket.request.max.bytes", _I, "104857600", "The largest request frame the broker reads.", at_least(1),
            read_only=True),
    Setting("connections.max.idle.ms", _L, "600000", "Close connections idle this long (-1: never).", at_least(-1),
            read_only=True),
    Setting("max.connections", _I, str(INT32_MAX), "Connections accepted at once, all listeners together.",
            at_least(0), read_only=True),
    Setting("max.connections.per.ip", _I, str(INT32_MAX), "Connections accepted at once from one address.",
            at_least(0), read_only=True),
    Setting("max.connections.per.ip.overrides", _S, "", "Per-address connection limits, host:count,...",
            read_only=True),
    # TLS (per listener with the listener.name.<listener>. prefix).
    Setting("ssl.keystore.type", _S, "PEM", "The keystore format.", one_of("PEM"), read_only=True,
            note="PEM only (the certificate chain and private key in one file); Kafka's default is JKS."),
    Setting("ssl.keystore.location", _S, None, "The file with the server's certificate chain and private key.",
            read_only=True),
    Setting("ssl.keystore.password", _PASSWORD, None, "The password of an encrypted private key in the keystore.",
            read_only=True, sensitive=True),
    Setting("ssl.key.password", _PASSWORD, None, "The password of the private key (wins over ssl.keystore.password).",
            read_only=True, sensitive=True),
    Setting("ssl.truststore.type", _S, "PEM", "The truststore format.", one_of("PEM"), read_only=True,
            note="PEM only; Kafka's default is JKS."),
    Setting("ssl.truststore.location", _S, None, "The CA certificates client certificates must chain to.",
            read_only=True),
    Setting("ssl.truststore.password", _PASSWORD, None, "The truststore's password.", read_only=True, sensitive=True,
            honoured=False),
    Setting("ssl.client.auth", _S, "none", "Whether TLS clients must present a certificate (mTLS).",
            _one_of_any_case("required", "requested", "none"), read_only=True),
    Setting("ssl.enabled.protocols", _LIST, "TLSv1.2,TLSv1.3", "The TLS versions offered.", _tls_versions,
            read_only=True),
    Setting("ssl.protocol", _S, "TLSv1.3", "The TLS protocol of the SSLContext.", read_only=True, honoured=False,
            note="accepted and reported; ssl.enabled.protocols decides."),
    Setting("ssl.cipher.suites", _LIST, "", "OpenSSL cipher names for TLS 1.2; empty: OpenSSL's defaults.",
            read_only=True),
    Setting("ssl.endpoint.identification.algorithm", _S, "https",
            "How a client checks the server's host name (a client setting).", read_only=True, honoured=False),
    Setting("ssl.principal.mapping.rules", _S, "DEFAULT", "How a certificate subject becomes a principal.",
            one_of("DEFAULT"), read_only=True, note="DEFAULT only: the subject's full distinguished name."),
    # SASL.
    Setting("sasl.enabled.mechanisms", _LIST, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "The SASL mechanisms SASL listeners offer.", read_only=True,
            note="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (unsecured tokens) are served; Kafka's "
            "default is GSSAPI."),
    Setting("sasl.mechanism.inter.broker.protocol", _S, "GSSAPI", "The mechanism brokers use with each other.",
            read_only=True, honoured=False),
    Setting("sasl.jaas.config", _PASSWORD, None, "JAAS login context of the broker's SASL server.", read_only=True,
            sensitive=True, honoured=False,
            note="accepted and never reported; users and passwords come from `kafkalite users` and "
            "AlterUserScramCredentials."),
    Setting("connections.max.reauth.ms", _L, "0", "Session lifetime after SASL authentication (KIP-368); 0: none.",
            at_least(0), read_only=True),
    Setting("connection.failed.authentication.delay.ms", _I, "100", "The wait before answering a failed login.",
            at_least(0), read_only=True),
    Setting("sasl.server.max.receive.size", _I, "524288", "The largest frame read before authentication.",
            at_least(1), read_only=True),
    # Authorization.
    Setting("authorizer.class.name", _S, "", "The authorizer; any non-empty value turns ACL checks on.",
            read_only=True),
    Setting("super.users", _S, "", "Principals allowed everything, User:a;User:b.", read_only=True),
    Setting("allow.everyone.if.no.acl.found", _B, "false", "Allow a resource that has no ACL at all.",
            read_only=True),
)  # fmt: skip

SERVER_SETTING_NAMES = frozenset(setting.name for setting in SERVER_SETTINGS)
_BY_NAME = {setting.name: setting for setting in SERVER_SETTINGS}


def per_listener_setting(name: str) -> tuple[str, Setting] | None:
    """(listener, the `ssl.*` row) for `listener.name.<listener>.ssl.<key>`; None when `name` is not one."""
    match = _LISTENER_PREFIX.match(name)
    if match is None or match["key"] not in _BY_NAME:
        return None
    return match["listener"], _BY_NAME[match["key"]]
