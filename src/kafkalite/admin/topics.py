"""Topics: list, describe (partitions, leaders, offsets, message counts, configs set on the topic), create, alter,
delete.

Names are looked up in the cluster's full metadata, never by asking for one topic: a Metadata request naming a topic
makes a broker with auto-creation on create it, and `describe typo` must not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    TopicMetadata,
)

from kafkalite.admin.connection import AdminError, Cluster
from kafkalite.admin.offsets import watermarks


@dataclass(frozen=True)
class TopicSummary:
    name: str
    partitions: int
    replication_factor: int
    internal: bool


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    start_offset: int
    end_offset: int

    @property
    def messages(self) -> int:
        return max(0, self.end_offset - self.start_offset)


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: list[PartitionInfo]
    configs: dict[str, str] = field(default_factory=dict)  # set on the topic (Kafka: DYNAMIC_TOPIC_CONFIG)

    @property
    def messages(self) -> int:
        return sum(p.messages for p in self.partitions)


def is_internal(name: str) -> bool:
    """Kafka's internal topics (`__consumer_offsets`, `__transaction_state`) and other double-underscore ones."""
    return name.startswith("__")


def topic_metadata(cluster: Cluster, name: str, *, refresh: bool = True) -> TopicMetadata:
    """The topic's metadata from a full Metadata request; AdminError('topic X does not exist') when absent."""
    metadata = cluster.refresh() if refresh else cluster.metadata
    topic = metadata.topics.get(name)
    if topic is None:
        raise AdminError(f"topic {name!r} does not exist on {cluster.settings.bootstrap}")
    if topic.error is not None:
        raise AdminError(f"topic {name!r}: {topic.error.str()}")
    return topic


def list_topics(cluster: Cluster, *, include_internal: bool = False) -> list[TopicSummary]:
    topics = []
    for name, topic in sorted(cluster.refresh().topics.items()):
        if is_internal(name) and not include_internal:
            continue
        first = topic.partitions.get(0)
        replicas = len(first.replicas) if first is not None else 0
        topics.append(TopicSummary(name, len(topic.partitions), replicas, is_internal(name)))
    return topics


def topic_configs(cluster: Cluster, name: str, *, only_set: bool = True) -> dict[str, str]:
    """The topic's configs; with `only_set`, those set on the topic itself (what differs from the defaults)."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    futures = cluster.admin.describe_configs([resource], request_timeout=cluster.settings.timeout_s)
    entries: Mapping[str, ConfigEntry] = cluster.wait(futures, "describe configs of topic")[resource]
    return {
        entry.name: entry.value
        for entry in sorted(entries.values(), key=lambda e: e.name)
        if entry.value is not None and (not only_set or _source(entry) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    }


def _source(entry: ConfigEntry) -> int:
    """The entry's config source as a number (librdkafka hands over a plain int where the stubs promise an enum)."""
    source: Any = entry.source
    return int(getattr(source, "value", source))


def describe_topic(cluster: Cluster, name: str) -> TopicDescription:
    topic = topic_metadata(cluster, name)
    keys = [(name, p) for p in sorted(topic.partitions)]
    marks = watermarks(cluster, keys)
    partitions = [
        PartitionInfo(
            partition=p,
            leader=topic.partitions[p].leader,
            replicas=list(topic.partitions[p].replicas),
            isr=list(topic.partitions[p].isrs),
            start_offset=marks[(name, p)].start,
            end_offset=marks[(name, p)].end,
        )
        for _, p in keys
    ]
    return TopicDescription(name, partitions, topic_configs(cluster, name))


def create_topic(
    cluster: Cluster, name: str, partitions: int, replication_factor: int = -1, configs: Mapping[str, str] = {}
) -> None:
    """CreateTopics; -1 replication takes the broker's default. A name in use raises AdminError."""
    new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=dict(configs))
    futures = cluster.admin.create_topics([new], request_timeout=cluster.settings.timeout_s)
    cluster.wait(futures, "create topic")


def alter_topic(
    cluster: Cluster,
    name: str,
    *,
    set_configs: Mapping[str, str] = {},
    delete_configs: Iterable[str] = (),
    partitions: int | None = None,
) -> None:
    """IncrementalAlterConfigs (SET and DELETE, other configs untouched), then CreatePartitions up to `partitions`."""
    topic = topic_metadata(cluster, name)
    if partitions is not None and partitions < len(topic.partitions):
        raise AdminError(
            f"topic {name!r} has {len(topic.partitions)} partitions; Kafka can add partitions but not remove them"
        )
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_configs.items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete_configs]
    if entries:
        resource = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=entries)
        futures = cluster.admin.incremental_alter_configs([resource], request_timeout=cluster.settings.timeout_s)
        cluster.wait(futures, "alter configs of topic")
    if partitions is not None and partitions > len(topic.partitions):
        grown = cluster.admin.create_partitions(
            [NewPartitions(name, partitions)], request_timeout=cluster.settings.timeout_s
        )
        cluster.wait(grown, "add partitions to topic")


def delete_topics(cluster: Cluster, names: Iterable[str]) -> None:
    """DeleteTopics; every name must exist first (checked, so a typo fails before anything is deleted)."""
    wanted = list(names)
    known = cluster.refresh().topics
    for name in wanted:
        if name not in known:
            raise AdminError(f"topic {name!r} does not exist on {cluster.settings.bootstrap}")
    futures = cluster.admin.delete_topics(wanted, request_timeout=cluster.settings.timeout_s)
    cluster.wait(futures, "delete topic")
