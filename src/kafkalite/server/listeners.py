"""Kafka's listener syntax: `listeners`, `advertised.listeners` and `listener.security.protocol.map`.

    listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9093,CLIENT://:9094
    listener.security.protocol.map=CLIENT:SSL                 (a listener name that is not a protocol needs one)
    advertised.listeners=PLAINTEXT://localhost:9092,SASL_SSL://broker.example:9093

An empty host binds every interface (as Kafka does) and advertises the loopback address unless an advertised
listener says otherwise; IPv6 hosts are written in brackets (`SSL://[::1]:9093`). Listener names are unique, and so
are ports unless the port is 0 (a free port is picked per listener). Errors are `InvalidConfigError`s naming the
key and the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kafkalite.errors import InvalidConfigError
from kafkalite.security.settings import Listener, SecurityProtocol, TlsSettings

_ENDPOINT = re.compile(r"^(?P<name>[A-Za-z0-9_-]+)://(?:\[(?P<ipv6>[^\]]*)\]|(?P<host>[^:/\[\]]*)):(?P<port>\d+)$")

DEFAULT_PROTOCOL_MAP: Mapping[str, SecurityProtocol] = {p.value: p for p in SecurityProtocol}


def parse_endpoints(key: str, value: str) -> list[tuple[str, str, int]]:
    """[(listener name, host, port)] from a comma-separated `NAME://host:port` list."""
    endpoints: list[tuple[str, str, int]] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if match is None:
            raise InvalidConfigError(f"{key}: {item!r} is not NAME://host:port")
        port = int(match["port"])
        if port > 65535:
            raise InvalidConfigError(f"{key}: port {port} in {item!r} is above 65535")
        host = match["ipv6"] if match["ipv6"] is not None else match["host"]
        endpoints.append((match["name"].upper(), host, port))
    names = [name for name, _, _ in endpoints]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidConfigError(f"{key}: listener name {duplicates[0]} appears more than once")
    return endpoints


def parse_protocol_map(value: str) -> dict[str, SecurityProtocol]:
    """`NAME:PROTOCOL,...` over Kafka's default (each protocol name maps to itself)."""
    mapping = dict(DEFAULT_PROTOCOL_MAP)
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or not name:
            raise InvalidConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
        try:
            mapping[name.strip().upper()] = SecurityProtocol(protocol.strip().upper())
        except ValueError:
            choices = ", ".join(p.value for p in SecurityProtocol)
            raise InvalidConfigError(
                f"listener.security.protocol.map: {protocol!r} is not a security protocol ({choices})"
            ) from None
    return mapping


def build_listeners(
    listeners: str,
    advertised: str | None,
    protocol_map: str,
    tls_for: Mapping[str, TlsSettings | None],
) -> tuple[Listener, ...]:
    """The listeners to bind; `tls_for[name]` is that listener's TLS settings (None when it has no keystore)."""
    protocols = parse_protocol_map(protocol_map)
    bound = parse_endpoints("listeners", listeners)
    if not bound:
        raise InvalidConfigError("listeners: no listener given")
    ports = [port for _, _, port in bound if port != 0]
    if len(ports) != len(set(ports)):
        raise InvalidConfigError(f"listeners: two listeners on one port in {listeners!r}")
    told = {name: (host, port) for name, host, port in parse_endpoints("advertised.listeners", advertised or "")}
    unknown = sorted(set(told) - {name for name, _, _ in bound})
    if unknown:
        raise InvalidConfigError(f"advertised.listeners: {unknown[0]} is not one of the listeners")
    result = []
    for name, host, port in bound:
        protocol = protocols.get(name)
        if protocol is None:
            raise InvalidConfigError(
                f"listener.security.protocol.map: no security protocol for listener {name} (add {name}:PROTOCOL)"
            )
        tls = tls_for.get(name)
        if protocol.uses_tls and tls is None:
            raise InvalidConfigError(
                f"listener {name} uses {protocol.value} but ssl.keystore.location is not set "
                f"(or listener.name.{name.lower()}.ssl.keystore.location)"
            )
        advertised_host, advertised_port = told.get(name, (None, None))
        result.append(
            Listener(
                name=name,
                protocol=protocol,
                host=host,
                port=port,
                advertised_host=advertised_host or None,
                advertised_port=advertised_port,
                tls=tls if protocol.uses_tls else None,
            )
        )
    return tuple(result)
