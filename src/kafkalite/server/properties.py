"""`server.properties`: the broker's settings under Kafka's names, from a file and `--override key=value`.

    kafkalite serve --config server.properties --override num.partitions=3 --override log.dirs=/tmp/kl

File format: Java properties as Kafka's own `server.properties` uses it: `key=value` or `key: value` per line, `#`
and `!` start comments, a trailing backslash continues a line. Later settings win (file, then overrides in order).

Every key is checked against the one broker settings table (`config.load_properties`; the listener and security
rows are `config.server_settings`): a key not in it, or a value its rule refuses, stops the start with an
`InvalidConfigError` naming the key. `log.*` keys are the broker-wide defaults of the topic configs of the same name
without the `log.` prefix (Kafka's synonyms). `listener.name.<listener>.ssl.*` sets one listener's TLS keys.

`load()` returns a `ServeSettings`: the `BrokerConfig`, the listeners, the `SecuritySettings`, and the server's
settings as given (`server_settings`), which the server reports when DescribeConfigs describes the broker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalite.config import BROKER_SETTINGS, BrokerConfig, load_properties
from kafkalite.config.server_settings import SERVER_SETTING_NAMES, per_listener_setting
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


def is_server_setting(name: str) -> bool:
    """Whether `name` configures listeners and security rather than the broker (`run_in_thread(properties=...)`)."""
    return name in SERVER_SETTING_NAMES or name.startswith("listener.name.")


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """Everything `kafkalite serve` starts from."""

    broker: BrokerConfig
    listeners: tuple[Listener, ...]
    security: SecuritySettings = field(default_factory=SecuritySettings)
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    server_settings: Mapping[str, str] = field(default_factory=dict)  # listener and security keys as given


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


def _per_listener(settings: Mapping[str, str]) -> dict[str, str]:
    """The `listener.name.<listener>.ssl.*` keys, each checked by its `ssl.*` row; any other `listener.name.` key is
    refused naming it."""
    found = {}
    for name, value in settings.items():
        if not name.startswith("listener.name."):
            continue
        per_listener = per_listener_setting(name)
        if per_listener is None:
            raise InvalidConfigError(f"Unknown broker config name: {name}")
        try:
            per_listener[1].parse(value)
        except InvalidConfigError as exc:
            raise InvalidConfigError(str(exc).replace(per_listener[1].name, name, 1)) from None
        found[name] = value
    return found


class _Settings:
    """Typed access to the given settings over the table's defaults."""

    def __init__(self, given: Mapping[str, str]) -> None:
        self.given = given

    def value(self, name: str) -> Any:
        text = self.given.get(name, BROKER_SETTINGS[name].setting.default)
        return None if text is None else BROKER_SETTINGS[name].setting.parse(text)

    def text(self, name: str) -> str | None:
        value = self.value(name)
        return None if value is None else str(value).strip()

    def number(self, name: str) -> int:
        value = self.value(name)
        assert isinstance(value, int), name
        return value

    def items(self, name: str) -> list[str]:
        """A comma-separated setting's items (LIST rows are parsed so already; STRING rows such as `listeners`
        are split here)."""
        value = self.value(name) or []
        items = value.split(",") if isinstance(value, str) else value
        return [item.strip() for item in items if item.strip()]


def load(given: Mapping[str, str], *, fsync: bool = True) -> ServeSettings:
    """`ServeSettings` from Kafka-named settings (file and overrides merged); `InvalidConfigError` names a bad key.

    Every key is checked by the broker settings table (`config.load_properties`), which refuses what it does not
    know; the listener and security keys come back apart and are read here.
    """
    per_listener = _per_listener(given)
    table_keys = {k: v for k, v in given.items() if k not in per_listener}
    if table_keys.get("log.dirs", "").strip() == "memory":  # KafkaLite's spelling of "no data directory"
        del table_keys["log.dirs"]
        table_keys.pop("log.dir", None)
    broker, server_keys = load_properties(table_keys, BrokerConfig(fsync=fsync))
    security_keys = {**server_keys, **per_listener}
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
    given_settings = {name: value.strip() for name, value in security_keys.items()}
    return ServeSettings(broker, listeners, security, s.number("socket.request.max.bytes"), given_settings)


def _listener_names(s: _Settings) -> Iterable[str]:
    return [item.split("://", 1)[0].strip().upper() for item in s.items("listeners") if "://" in item]


def _tls(given: Mapping[str, str], listener: str) -> TlsSettings | None:
    """A listener's TLS settings: `listener.name.<listener>.ssl.*` over the plain `ssl.*` keys."""
    prefix = f"listener.name.{listener.lower()}."

    def get(name: str) -> str | None:
        value = given.get(prefix + name, given.get(name, BROKER_SETTINGS[name].setting.default))
        return None if value is None else value.strip()

    def items(name: str) -> tuple[str, ...]:
        return tuple(item.strip() for item in (get(name) or "").split(",") if item.strip())

    keystore = get("ssl.keystore.location")
    if not keystore:
        return None
    protocols = items("ssl.enabled.protocols")
    return TlsSettings(
        keystore_location=keystore,
        key_password=get("ssl.key.password") or get("ssl.keystore.password") or None,
        truststore_location=get("ssl.truststore.location") or None,
        client_auth=ClientAuth((get("ssl.client.auth") or "none").lower()),
        protocols=protocols,
        cipher_suites=items("ssl.cipher.suites"),
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
        allow_everyone_if_no_acl_found=bool(s.value("allow.everyone.if.no.acl.found")),
        failed_authentication_delay_ms=s.number("connection.failed.authentication.delay.ms"),
        reauthentication_ms=s.number("connections.max.reauth.ms"),
        connections_max_idle_ms=s.number("connections.max.idle.ms"),
        max_connections=s.number("max.connections"),
        max_connections_per_ip=s.number("max.connections.per.ip"),
        max_connections_per_ip_overrides=overrides,
        sasl_max_receive_bytes=s.number("sasl.server.max.receive.size"),
    )
