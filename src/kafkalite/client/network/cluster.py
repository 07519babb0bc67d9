"""`kafkalite.connect()`: the embedded `Broker`'s API, over the network, to any Kafka cluster.

    async with kafkalite.connect("localhost:9092") as broker:     # or kafkalite.Broker(...) embedded: same code
        await broker.create_topic("orders", partitions=3)
        async with broker.producer() as producer:
            await producer.send("orders", b"payload", key=b"user-1")
        async with broker.consumer("orders", group_id="billing") as consumer:
            await consumer.run(handle, max_retries=3)
        await broker.dead_letters.replay("orders")

The Kafka client underneath is aiokafka: its admin client, producer and consumer own the connections, metadata,
group membership, heartbeats and fetching. KafkaLite adds what makes the semantics the embedded broker's: MD5 key
routing (`kafkalite.client.partitioners`), the handler's retries then `<topic>.DLQ` with Spring Kafka's headers, and
replay to the failing group's retry topic (`kafkalite.broker.dead_letter_format`, shared with the embedded broker).

`client_settings` are aiokafka's keyword arguments for connecting (`security_protocol`, `ssl_context`,
`sasl_mechanism`, `sasl_plain_username`, `request_timeout_ms`, `metadata_max_age_ms`, ...): each goes to every aiokafka
client that accepts it; one that none accepts is a `TypeError` at once rather than a setting silently ignored.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic

from kafkalite.client.network.kafka_errors import translate
from kafkalite.errors import ClosedError, TopicExistsError, UnknownTopicError

if TYPE_CHECKING:
    from kafkalite.client.network.consumer import NetworkConsumer
    from kafkalite.client.network.dead_letters import NetworkDeadLetters
    from kafkalite.client.network.producer import NetworkProducer

DEFAULT_BOOTSTRAP = "localhost:9092"
_CLIENTS: tuple[type, ...] = (AIOKafkaAdminClient, AIOKafkaProducer, AIOKafkaConsumer)
# Set by KafkaLite itself, or per producer()/consumer() under the embedded API's names (acks=, name=, group_id=, ...).
_RESERVED = {
    *("bootstrap_servers", "loop", "client_id", "acks", "partitioner", "group_id", "enable_auto_commit"),
    *("auto_commit_interval_ms", "auto_offset_reset", "key_serializer", "value_serializer", "key_deserializer"),
    "value_deserializer",
}


def parse_bootstrap(bootstrap: str) -> list[str]:
    """`host:port[,host:port...]` as a list; `ValueError` naming the culprit otherwise."""
    if not isinstance(bootstrap, str) or not bootstrap.strip():
        raise ValueError("bootstrap address is empty: expected HOST:PORT")
    servers = [part.strip() for part in bootstrap.split(",")]
    for server in servers:
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bad bootstrap address {server!r}: expected HOST:PORT with a port in 1..65535")
    return servers


def _accepts(cls: type) -> set[str]:
    return set(inspect.signature(cls).parameters) - {"loop"}


def connect(bootstrap: str | None = None, **client_settings: Any) -> Cluster:
    """A handle on the Kafka cluster at `bootstrap` (default `$KAFKALITE_BOOTSTRAP`, else localhost:9092), with the
    embedded `Broker`'s interface; `async with` (or `await start()`) connects."""
    if bootstrap is None:
        bootstrap = os.environ.get("KAFKALITE_BOOTSTRAP") or DEFAULT_BOOTSTRAP
    return Cluster(bootstrap, **client_settings)


class Cluster:
    """A Kafka cluster over the network (KafkaLite served, Apache Kafka, Redpanda, Tansu, ...)."""

    def __init__(self, bootstrap: str, **client_settings: Any) -> None:
        from kafkalite.client.network.dead_letters import NetworkDeadLetters

        self.servers = parse_bootstrap(bootstrap)
        self.bootstrap = ",".join(self.servers)
        for name in client_settings:
            if name in _RESERVED:
                raise TypeError(
                    f"{name!r} is not a connection setting: KafkaLite sets it, or producer()/consumer() take it"
                )
            if not any(name in _accepts(cls) for cls in _CLIENTS):
                raise TypeError(f"unknown client setting {name!r} (aiokafka's connection settings are accepted)")
        self._settings = dict(client_settings)
        self._admin: AIOKafkaAdminClient | None = None
        self._creating = asyncio.Lock()
        self.dead_letters: NetworkDeadLetters = NetworkDeadLetters(self)

    def settings_for(self, cls: type, **options: Any) -> dict[str, Any]:
        """Keyword arguments for an aiokafka client: the connection settings it accepts, then `options`."""
        accepted = _accepts(cls)
        return {
            "bootstrap_servers": self.servers,
            **{k: v for k, v in self._settings.items() if k in accepted},
            **options,
        }

    # --- lifecycle --------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect; `UnreachableError` when no broker answers at the bootstrap address."""
        if self._admin is not None:
            return
        admin = AIOKafkaAdminClient(**self.settings_for(AIOKafkaAdminClient))
        try:
            await admin.start()
        except Exception as exc:
            await admin.close()
            raise translate(exc, f"cannot connect to {self.bootstrap}") from exc
        self._admin = admin

    async def close(self) -> None:
        await self.dead_letters.close()
        if self._admin is not None:
            admin, self._admin = self._admin, None
            await admin.close()

    @property
    def admin(self) -> AIOKafkaAdminClient:
        if self._admin is None:
            raise ClosedError(f"not connected to {self.bootstrap}: use `async with kafkalite.connect(...)`")
        return self._admin

    # --- topics -----------------------------------------------------------------------------------------------

    async def create_topic(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
        *,
        replication_factor: int = 1,
    ) -> None:
        """Create a topic; `TopicExistsError`, `InvalidTopicError` or `InvalidConfigError` on bad input."""
        new = NewTopic(
            name, partitions, replication_factor, topic_configs={k: str(v) for k, v in (config or {}).items()}
        )
        try:
            answer = await self.admin.create_topics([new])
        except Exception as exc:
            raise translate(exc, f"cannot create topic {name!r}") from exc
        for entry in answer.topic_errors:
            topic, code, message = entry[0], entry[1], entry[2] if len(entry) > 2 else ""
            if code:
                raise translate(_coded(code, message), f"cannot create topic {topic!r}")

    async def delete_topic(self, name: str) -> None:
        try:
            answer = await self.admin.delete_topics([name])
        except Exception as exc:
            raise translate(exc, f"cannot delete topic {name!r}") from exc
        for entry in answer.topic_error_codes:
            if entry[1]:
                raise translate(_coded(entry[1], ""), f"cannot delete topic {name!r}")

    async def list_topics(self) -> list[str]:
        try:
            return sorted(await self.admin.list_topics())
        except Exception as exc:
            raise translate(exc, "cannot list topics") from exc

    async def partition_count(self, topic: str) -> int:
        """The topic's partition count; `UnknownTopicError` when it does not exist."""
        counts = await self.partition_counts([topic])
        if topic not in counts:
            raise UnknownTopicError(f"unknown topic {topic!r} on {self.bootstrap}")
        return counts[topic]

    async def partition_counts(self, topics: Sequence[str]) -> dict[str, int]:
        """Partition counts of those of `topics` that exist. One metadata request for every topic: a request naming
        topics would auto-create them on a cluster that allows it, and asking must not create."""
        wanted = set(topics)
        try:
            described = await self.admin.describe_topics(None)
        except Exception as exc:
            raise translate(exc, f"cannot describe {', '.join(topics)}") from exc
        return {
            t["topic"]: len(t["partitions"])
            for t in described
            if t["topic"] in wanted and t["error_code"] == 0 and t["partitions"]
        }

    async def ensure_partitions(self, name: str, count: int) -> bool:
        """Create `name` with `count` partitions, or grow it to `count`; True if it was created now."""
        async with self._creating:
            existing = (await self.partition_counts([name])).get(name)
            if existing is None:
                try:
                    await self.create_topic(name, count)
                except TopicExistsError:
                    return False
                return True
            if existing < count:
                try:
                    await self.admin.create_partitions({name: NewPartitions(count)})
                except Exception as exc:
                    raise translate(exc, f"cannot grow {name!r} to {count} partitions") from exc
            return False

    # --- clients ----------------------------------------------------------------------------------------------

    def producer(self, **options: Any) -> NetworkProducer:
        """A producer writing into this cluster; options as `kafkalite.Producer` takes them."""
        from kafkalite.client.network.producer import NetworkProducer

        return NetworkProducer(self, **options)

    def consumer(self, topics: str | Sequence[str], group_id: str | None = None, **options: Any) -> NetworkConsumer:
        """A consumer reading from this cluster; `async with` joins the group, leaving it on exit."""
        from kafkalite.client.network.consumer import NetworkConsumer

        return NetworkConsumer(self, topics, group_id=group_id, **options)


def _coded(code: int, message: str | None) -> Exception:
    from aiokafka.errors import for_code

    error: Exception = for_code(code)(message or "")
    return error
