"""`server.properties`: the broker's settings under Kafka's names, from a file and `--override key=value`.

    kafkalite serve --config server.properties --override num.partitions=3 --override log.dirs=/tmp/kl

File format: Java properties as Kafka's own `server.properties` uses it: `key=value` or `key: value` per line, `#`
and `!` start comments, a trailing backslash continues a line. Later settings win (file, then overrides in order).

Listener and security keys are checked against `config.server_keys.SERVE_KEYS`, the others by the broker's table
(`config.load_properties`): a key that is in neither, or a value its type refuses, stops the start with an
`InvalidConfigError` naming the key. `log.*` keys are the broker-wide defaults of the topic configs of the same name
without the `log.` prefix (Kafka's synonyms). `listener.name.<listener>.ssl.*` sets one listener's TLS keys.

`load()` returns a `ServeSettings`: the `BrokerConfig`, the listeners and the `SecuritySettings`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.config import BrokerConfig, load_properties
from kafkalite.config.server_keys import SERVE_KEYS, parse_bool, parse_list
from kafkalite.errors import InvalidConfigError
from kafkalite.protocol.wire import DEFAULT_MAX_FRAME_BYTES
from kafkalite.security.settings import (
    SUPPORTED_SASL_MECHANISMS,
    ClientAuth,
    Listener,
    SecuritySettings,
    TlsSettings,
)
from kafkalite.server.listeners import build_listeners

_LISTENER_PREFIX = re.compile(r"^listener\.name\.(?P<listener>[a-z0-9_-]+)\.(?P<key>ssl\..+)$")
_TLS_KEYS = frozenset(name for name in SERVE_KEYS if name.startswith("ssl."))


LISTENER_AND_SECURITY_PREFIXES = (
    "listeners",
    "advertised.listeners",
    "listener.",
    "ssl.",
    "sasl.",
    "super.users",
    "allow.everyone.if.no.acl.found",
    "authorizer.class.name",
    "connections.max.",
    "connection.failed.authentication.delay.ms",
    "max.connections",
    "socket.request.max.bytes",
)
"""The keys that configure listeners and security rather than the broker (`run_in_thread(properties=...)`)."""


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """Everything `kafkalite serve` starts from."""

    broker: BrokerConfig
    listeners: tuple[Listener, ...]
    security: SecuritySettings = field(default_factory=SecuritySettings)
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES


def read_properties(path: Path) -> dict[str, str]:
    """The `key=value` pairs of a Java properties file (continuations, comments and `:` separators as Java reads)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    result: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split(logical)
        result[key] = value
        logical = ""
    if logical:
        key, value = _split(logical)
        result[key] = value
    return result


def _split(line: str) -> tuple[str, str]:
    match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
    if match is None:
        return line.strip(), ""
    return match[1], match[2].strip()


def parse_override(text: str) -> tuple[str, str]:
    """`key=value` from the command line."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InvalidConfigError(f"--override {text!r}: expected key=value")
    return key.strip(), value


def check_keys(settings: Mapping[str, str]) -> None:
    """Refuse the first unknown key or invalid value, naming it."""
    for name, value in settings.items():
        match = _LISTENER_PREFIX.match(name)
        key = SERVE_KEYS.get(match["key"] if match else name)
        if key is None or (match is not None and match["key"] not in _TLS_KEYS):
            raise InvalidConfigError(f"Unknown broker config name: {name}")
        try:
            key.parse(value)
        except ValueError as exc:
            raise InvalidConfigError(f"invalid value {value!r} for {name!r}: {exc}") from None


class _Settings:
    """Typed access to the given settings over the table's defaults."""

    def __init__(self, given: Mapping[str, str]) -> None:
        self.given = given

    def text(self, name: str) -> str | None:
        value = self.given.get(name, SERVE_KEYS[name].default)
        return None if value is None else value.strip()

    def number(self, name: str) -> int | None:
        value = self.text(name)
        return None if value is None else int(value)

    def flag(self, name: str) -> bool:
        return parse_bool(self.text(name) or "false")

    def items(self, name: str) -> list[str]:
        return parse_list(self.text(name) or "")


def load(given: Mapping[str, str], *, fsync: bool = True) -> ServeSettings:
    """`ServeSettings` from Kafka-named settings (file and overrides merged); `InvalidConfigError` names a bad key.

    Listener and security keys are read here against `SERVE_KEYS`; every other key goes to the broker's own
    table (`config.load_properties`), which refuses what it does not know.
    """
    security_keys = {k: v for k, v in given.items() if k.startswith(LISTENER_AND_SECURITY_PREFIXES)}
    broker_keys = {k: v for k, v in given.items() if k not in security_keys}
    if broker_keys.get("log.dirs", "").strip() == "memory":  # KafkaLite's spelling of "no data directory"
        del broker_keys["log.dirs"]
        broker_keys.pop("log.dir", None)
    check_keys(security_keys)
    broker, _ = load_properties(broker_keys, BrokerConfig(fsync=fsync))
    if broker.group_min_session_timeout_ms > broker.group_max_session_timeout_ms:
        raise InvalidConfigError("group.min.session.timeout.ms is above group.max.session.timeout.ms")
    s = _Settings(security_keys)
    listeners = build_listeners(
        s.text("listeners") or "",
        s.text("advertised.listeners"),
        s.text("listener.security.protocol.map") or "",
        {name: _tls(security_keys, name) for name in _listener_names(s)},
    )
    security = _security(s)
    if any(listener.protocol.uses_sasl for listener in listeners):
        unsupported = [m for m in security.sasl_mechanisms if m not in SUPPORTED_SASL_MECHANISMS]
        if unsupported or not security.sasl_mechanisms:
            raise InvalidConfigError(
                f"sasl.enabled.mechanisms: {', '.join(unsupported) or 'none'} not served "
                f"(KafkaLite serves {', '.join(SUPPORTED_SASL_MECHANISMS)})"
            )
    return ServeSettings(broker, listeners, security, _at_least(s, "socket.request.max.bytes", 1))


def _at_least(s: _Settings, name: str, minimum: int) -> int:
    value = s.number(name)
    assert value is not None
    if value < minimum:
        raise InvalidConfigError(f"invalid value {value} for {name!r}: must be >= {minimum}")
    return value


def _listener_names(s: _Settings) -> Iterable[str]:
    return [item.split("://", 1)[0].strip().upper() for item in s.items("listeners") if "://" in item]


def _tls(given: Mapping[str, str], listener: str) -> TlsSettings | None:
    """A listener's TLS settings: `listener.name.<listener>.ssl.*` over the plain `ssl.*` keys."""
    prefix = f"listener.name.{listener.lower()}."

    def get(name: str) -> str | None:
        value = given.get(prefix + name, given.get(name, SERVE_KEYS[name].default))
        return None if value is None else value.strip()

    keystore = get("ssl.keystore.location")
    if not keystore:
        return None
    protocols = tuple(parse_list(get("ssl.enabled.protocols") or ""))
    too_old = [p for p in protocols if p not in ("TLSv1.2", "TLSv1.3")]
    if too_old or not protocols:
        raise InvalidConfigError(
            f"ssl.enabled.protocols: {', '.join(too_old) or 'none'} refused (KafkaLite serves TLSv1.2 and TLSv1.3)"
        )
    return TlsSettings(
        keystore_location=keystore,
        key_password=get("ssl.key.password") or get("ssl.keystore.password") or None,
        truststore_location=get("ssl.truststore.location") or None,
        client_auth=ClientAuth(get("ssl.client.auth") or "none"),
        protocols=protocols,
        cipher_suites=tuple(parse_list(get("ssl.cipher.suites") or "")),
    )


def _security(s: _Settings) -> SecuritySettings:
    overrides: dict[str, int] = {}
    for item in s.items("max.connections.per.ip.overrides"):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise InvalidConfigError(f"max.connections.per.ip.overrides: {item!r} is not host:count")
        overrides[host.strip()] = int(count)
    super_users = frozenset(u.strip() for u in (s.text("super.users") or "").split(";") if u.strip())
    for user in super_users:
        if ":" not in user:
            raise InvalidConfigError(f"super.users: {user!r} is not a principal (PrincipalType:name, e.g. User:alice)")
    return SecuritySettings(
        sasl_mechanisms=tuple(m.upper() for m in s.items("sasl.enabled.mechanisms")),
        authorizer_enabled=bool(s.text("authorizer.class.name")),
        super_users=super_users,
        allow_everyone_if_no_acl_found=s.flag("allow.everyone.if.no.acl.found"),
        failed_authentication_delay_ms=_at_least(s, "connection.failed.authentication.delay.ms", 0),
        reauthentication_ms=_at_least(s, "connections.max.reauth.ms", 0),
        connections_max_idle_ms=_at_least(s, "connections.max.idle.ms", -1),
        max_connections=_at_least(s, "max.connections", 0),
        max_connections_per_ip=_at_least(s, "max.connections.per.ip", 0),
        max_connections_per_ip_overrides=overrides,
        sasl_max_receive_bytes=_at_least(s, "sasl.server.max.receive.size", 1),
    )
