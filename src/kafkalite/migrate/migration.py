"""One migration run: plan, create target topics, copy each topic's records, carry group offsets over, verify.

Every step is safe to repeat, so running the same command again after an interruption (Ctrl-C, a crash, a network
failure) resumes it, and running it again later copies what the source received meanwhile and refreshes the groups'
positions: the progress file (`checkpoint`) says how far each partition got.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kafkalite.admin import ClientSettings, Cluster
from kafkalite.admin.topics import topic_metadata
from kafkalite.migrate.checkpoint import Checkpoint
from kafkalite.migrate.copy import TopicCopy, TopicProgress
from kafkalite.migrate.groups import GroupResult, migrate_group
from kafkalite.migrate.plan import TopicPlan, plan_groups, plan_topics, prepare_target
from kafkalite.migrate.verify import PartitionCheck, verify_topic


@dataclass(frozen=True)
class MigrationOptions:
    state_path: Path
    topics: Sequence[str] = ()  # glob patterns; empty: every non-internal topic
    groups: Sequence[str] = ()  # glob patterns; empty: every group
    replication_factor: int = -1  # of created target topics; -1: the target's default
    copy: bool = True  # False: verify only
    verify: bool = False


class Reporter(Protocol):
    def planned(self, topics: Sequence[TopicPlan], created: Sequence[str]) -> None: ...
    def progress(self, progress: TopicProgress) -> None: ...
    def group(self, result: GroupResult) -> None: ...
    def verified(self, check: PartitionCheck) -> None: ...


@dataclass
class MigrationResult:
    topics: list[TopicPlan] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    copied: list[TopicProgress] = field(default_factory=list)
    groups: list[GroupResult] = field(default_factory=list)
    checks: list[PartitionCheck] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def records(self) -> int:
        return sum(p.copied for p in self.copied)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.copied)

    @property
    def verified(self) -> bool:
        return all(check.ok for check in self.checks)


def migrate(
    source_settings: ClientSettings, target_settings: ClientSettings, options: MigrationOptions, reporter: Reporter
) -> MigrationResult:
    started = time.perf_counter()
    source, target = Cluster.connect(source_settings), Cluster.connect(target_settings)
    result = MigrationResult()
    result.topics = plan_topics(source, options.topics)
    if options.copy:
        checkpoint = Checkpoint.open(options.state_path, source_settings.bootstrap, target_settings.bootstrap)
        checkpoint.save()  # an unwritable progress file fails here, before anything is created on the target
        result.created = prepare_target(target, result.topics, options.replication_factor)
        reporter.planned(result.topics, result.created)
        for plan in result.topics:
            copy = TopicCopy(source, target, checkpoint, plan.name, plan.partitions)
            result.copied.append(copy.run(reporter.progress))
        names = [plan.name for plan in result.topics]
        for group in plan_groups(source, options.groups):
            outcome = migrate_group(source, target, checkpoint, group, names)
            reporter.group(outcome)
            result.groups.append(outcome)
    else:
        reporter.planned(result.topics, [])
    if options.verify:
        target.refresh()
        for plan in result.topics:
            topic_metadata(target, plan.name, refresh=False)  # a topic missing on the target: one clear error
        for plan in result.topics:
            result.checks += verify_topic(source, target, plan.name, plan.partitions, reporter.verified)
    result.seconds = time.perf_counter() - started
    return result
