"""Client settings and the connected admin handle every tool starts from.

`ClientSettings` holds a bootstrap list and librdkafka properties (Kafka's own names: `security.protocol`,
`sasl.mechanism`, ...), as given by `-b` and `-X key=value`. `Cluster.connect(settings)` opens an admin client and
proves the cluster answers a Metadata request before anything else happens, so a wrong address or a stopped broker
becomes one `AdminError` within the timeout instead of librdkafka retrying forever in the background.

librdkafka's own log lines go to the `kafkalite.librdkafka` logger, which has no handler unless the caller adds one
(`kafkalite ... -v`): a tool's stderr carries its own one-line errors, not the library's reconnect chatter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

from kafkalite.errors import KafkaLiteError

LIBRDKAFKA_LOG = logging.getLogger("kafkalite.librdkafka")
LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
LIBRDKAFKA_LOG.propagate = False

# librdkafka error codes that mean "nobody answered at that address", reported through error_cb while it retries.
_UNREACHABLE = {KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE, KafkaError._TRANSPORT, KafkaError._AUTHENTICATION}


class AdminError(KafkaLiteError):
    """A tool's request failed: unreachable cluster, unknown topic or group, a Kafka error in the answer."""


def parse_properties(pairs: Iterable[str], option: str = "-X") -> dict[str, str]:
    """`["k=v", ...]` → `{"k": "v"}`; a pair without `=` or with an empty key raises AdminError naming it."""
    properties: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise AdminError(f"bad {option} {pair!r}: expected key=value")
        properties[key.strip()] = value
    return properties


def check_bootstrap(bootstrap: str) -> str:
    """A comma-separated list of HOST:PORT, each port 1-65535; returns it unchanged or raises AdminError."""
    for address in bootstrap.split(","):
        host, sep, port = address.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise AdminError(f"bad bootstrap address {address.strip()!r}: expected HOST:PORT")
    return bootstrap


@dataclass(frozen=True)
class ClientSettings:
    """Where a cluster is and how to talk to it; `config()` is the librdkafka configuration for one client."""

    bootstrap: str
    properties: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        check_bootstrap(self.bootstrap)

    def config(self, **overrides: Any) -> dict[str, Any]:
        """The client configuration: the bootstrap, our defaults, then `overrides`, then the user's `-X` settings."""
        return {
            "bootstrap.servers": self.bootstrap,
            "logger": LIBRDKAFKA_LOG,
            "socket.connection.setup.timeout.ms": max(1000, int(self.timeout_s * 1000)),  # librdkafka's minimum
            **overrides,
            **self.properties,
        }


class _Reachability:
    """Collects the errors librdkafka reports while it tries to connect (its error_cb)."""

    def __init__(self) -> None:
        self.last: KafkaError | None = None  # the most telling error so far: why a connection failed
        self.gave_up = False  # librdkafka said every bootstrap address is down, or a name does not resolve

    def __call__(self, error: KafkaError) -> None:
        code = error.code()
        if code in (KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE):
            self.gave_up = True
        if code in _UNREACHABLE and (self.last is None or code != KafkaError._ALL_BROKERS_DOWN):
            self.last = error


def kafka_message(error: BaseException | KafkaError) -> str:
    """librdkafka's own words for an error (`KafkaException` wraps a `KafkaError`), without the wrapper's repr."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        error = error.args[0]
    if isinstance(error, KafkaError):
        return str(error.str())
    return str(error)


class Cluster:
    """An admin client on a cluster that has answered at least one Metadata request."""

    def __init__(self, settings: ClientSettings, admin: AdminClient, metadata: ClusterMetadata) -> None:
        self.settings = settings
        self.admin = admin
        self.metadata = metadata

    @classmethod
    def connect(cls, settings: ClientSettings) -> Cluster:
        """Open an admin client and wait (up to the timeout) for a Metadata answer; AdminError when none comes."""
        reachability = _Reachability()
        try:
            admin = AdminClient(settings.config(error_cb=reachability))
        except KafkaException as exc:  # a bad -X property or value
            raise AdminError(kafka_message(exc)) from None
        metadata = wait_for_metadata(admin, settings, reachability)
        return cls(settings, admin, metadata)

    def refresh(self, topic: str | None = None) -> ClusterMetadata:
        """Fresh metadata (for one topic only when named: Kafka may auto-create a topic named in a Metadata request)."""
        try:
            self.metadata = self.admin.list_topics(topic, timeout=self.settings.timeout_s)
        except KafkaException as exc:
            raise AdminError(f"metadata from {self.settings.bootstrap}: {kafka_message(exc)}") from None
        return self.metadata

    def wait(self, futures: Mapping[Any, Any], what: str) -> dict[Any, Any]:
        """Every future's result, keyed as given; the first failure raises AdminError('<what> <key>: <reason>')."""
        results: dict[Any, Any] = {}
        for key, future in futures.items():
            try:
                results[key] = future.result(timeout=self.settings.timeout_s)
            except KafkaException as exc:
                raise AdminError(f"{what} {describe_key(key)}: {kafka_message(exc)}") from None
            except TimeoutError:
                raise AdminError(
                    f"{what} {describe_key(key)}: no answer from {self.settings.bootstrap} "
                    f"within {self.settings.timeout_s:g} s"
                ) from None
        return results


def describe_key(key: Any) -> str:
    """How a future's key reads in an error message: a topic name, `topic[partition]`, a group id."""
    topic = getattr(key, "topic", None)
    if topic is not None and hasattr(key, "partition"):
        return f"{topic}[{key.partition}]"
    name = getattr(key, "name", None)
    if name is not None:
        return str(name)
    return str(key)


def wait_for_metadata(admin: AdminClient, settings: ClientSettings, reachability: _Reachability) -> ClusterMetadata:
    """Ask for metadata in short slices so a refused connection ends the wait at once rather than at the timeout."""
    deadline = time.monotonic() + settings.timeout_s
    while True:
        try:
            return admin.list_topics(timeout=min(0.5, max(0.05, deadline - time.monotonic())))
        except KafkaException as exc:
            failure = kafka_message(exc)
        admin.poll(0)  # serve error_cb
        if reachability.last is not None and reachability.last.code() == KafkaError._AUTHENTICATION:
            raise AdminError(f"{settings.bootstrap}: {reachability.last.str()}")
        if reachability.gave_up and reachability.last is not None:
            raise AdminError(f"cannot reach {settings.bootstrap}: {_reason(reachability.last)}")
        if time.monotonic() >= deadline:
            detail = _reason(reachability.last) if reachability.last is not None else failure
            raise AdminError(f"cannot reach {settings.bootstrap} within {settings.timeout_s:g} s: {detail}")


def _reason(error: KafkaError) -> str:
    """The interesting tail of librdkafka's message: 'Connection refused' rather than the whole broker-state story."""
    text = str(error.str())
    for marker in ("failed: ", "Failed to resolve "):
        if marker in text:
            text = text.split(marker, 1)[1] if marker == "failed: " else "failed to resolve " + text.split(marker, 1)[1]
    return text.split(" (after ")[0]
