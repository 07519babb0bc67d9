"""What a migration copies: the source topics and groups matching the patterns, and the target topics they need.

Patterns are shell-style globs (`orders*`, `*.DLQ`), any of which may match; without one every topic except the
internal ones (`__consumer_offsets` and other `__` names) and every group is taken. A target topic is created with
the source's partition count and the configs set on the source topic; a target topic that already exists must have
at least as many partitions, since every record goes to the partition of the same number.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Sequence
from dataclasses import dataclass

from kafkalite.admin import AdminError, Cluster
from kafkalite.admin import topics as topic_ops
from kafkalite.admin.groups import list_groups


@dataclass(frozen=True)
class TopicPlan:
    name: str
    partitions: int
    configs: dict[str, str]


def matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def plan_topics(source: Cluster, patterns: Sequence[str]) -> list[TopicPlan]:
    """The source topics to copy, with partition counts and the configs set on them; AdminError when none match."""
    chosen = [
        t
        for t in topic_ops.list_topics(source, include_internal=bool(patterns))
        if (matches(t.name, patterns) if patterns else not t.internal)
    ]
    if patterns and not chosen:
        raise AdminError(f"no topic on {source.settings.bootstrap} matches {', '.join(patterns)}")
    return [TopicPlan(t.name, t.partitions, topic_ops.topic_configs(source, t.name)) for t in chosen]


def plan_groups(source: Cluster, patterns: Sequence[str]) -> list[str]:
    return [g.group_id for g in list_groups(source) if not patterns or matches(g.group_id, patterns)]


def prepare_target(target: Cluster, plans: Sequence[TopicPlan], replication_factor: int) -> list[str]:
    """Create the missing target topics; returns the names created. Too few partitions on the target: AdminError."""
    existing = target.refresh().topics
    created = []
    for plan in plans:
        found = existing.get(plan.name)
        if found is None:
            topic_ops.create_topic(target, plan.name, plan.partitions, replication_factor, plan.configs)
            created.append(plan.name)
        elif len(found.partitions) < plan.partitions:
            raise AdminError(
                f"topic {plan.name!r} has {len(found.partitions)} partition(s) on {target.settings.bootstrap} but "
                f"{plan.partitions} on the source; every record keeps its partition number, so the target needs as "
                "many (kafkalite topics alter -p)"
            )
    if created:
        _wait_for_leaders(target, created, {p.name: p.partitions for p in plans})
    return created


def _wait_for_leaders(target: Cluster, names: Sequence[str], partitions: dict[str, int]) -> None:
    """Metadata lists every new partition with a leader before any record is sent (Kafka creates asynchronously)."""
    deadline = time.monotonic() + target.settings.timeout_s
    while True:
        topics = target.refresh().topics
        ready = all(
            name in topics
            and len(topics[name].partitions) >= partitions[name]
            and all(p.leader >= 0 for p in topics[name].partitions.values())
            for name in names
        )
        if ready:
            return
        if time.monotonic() > deadline:
            raise AdminError(f"new topics on {target.settings.bootstrap} have no leader yet: {', '.join(names)}")
        time.sleep(0.1)
