"""`kafkalite migrate`: topics, records and consumer-group positions from one Kafka cluster to another.

    plan        which topics and groups (glob patterns), target topics created with partitions and configs
    copy        records partition to partition, in order, by an idempotent producer; resumable (checkpoint)
    offset_map  where each source offset landed on the target, as runs; translates committed offsets
    groups      committed offsets translated and committed on the target
    verify      counts and SHA-256 checksums per partition, source against target
    migration   one run of all of the above

Both ends are any Kafka cluster reached over the wire through librdkafka (typically `kafkalite serve` as the source
and Apache Kafka as the target); nothing here reads KafkaLite's files directly.
"""

from kafkalite.migrate.copy import TopicProgress
from kafkalite.migrate.groups import GroupResult
from kafkalite.migrate.migration import MigrationOptions, MigrationResult, Reporter, migrate
from kafkalite.migrate.plan import TopicPlan
from kafkalite.migrate.verify import PartitionCheck

__all__ = [
    "GroupResult",
    "MigrationOptions",
    "MigrationResult",
    "PartitionCheck",
    "Reporter",
    "TopicPlan",
    "TopicProgress",
    "migrate",
]
