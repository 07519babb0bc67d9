"""One module per Kafka API key; importing this package registers every handler with `server.dispatch`."""

from kafkalite.server.handlers import (
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    fetch,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)

__all__ = [
    "api_versions",
    "create_partitions",
    "create_topics",
    "delete_records",
    "delete_topics",
    "describe_cluster",
    "describe_configs",
    "fetch",
    "incremental_alter_configs",
    "init_producer_id",
    "list_offsets",
    "metadata",
    "produce",
]
