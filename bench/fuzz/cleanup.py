"""After a run: delete the topics and groups the fuzzed frames created, so the memory check measures what the broker
kept beyond the state it was asked to keep.

A million frames create thousands of topics (CreateTopics, and Metadata with auto-creation), some with thousands of
partitions; a broker holds each partition's state (about 2 KB in memory) for as long as the topic exists, as Kafka
does. That growth is the clients' doing, not a leak. What the run must show is that nothing else stays: once those
topics and groups are deleted, the broker's memory returns close to where it started.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

BATCH = 500  # topics per DeleteTopics request
TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class CreatedState:
    """What the frames left behind, as counted before it was deleted."""

    topics: int
    partitions: int
    groups: int


def delete_created_state(bootstrap: str) -> CreatedState:
    """Delete every topic (but internal ones) and every group on the broker at `bootstrap`; return what there was."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 60_000})
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    topics = [name for name in metadata.topics if not name.startswith("__")]
    partitions = sum(len(metadata.topics[name].partitions) for name in topics)
    for start in range(0, len(topics), BATCH):
        futures = admin.delete_topics(topics[start : start + BATCH], operation_timeout=TIMEOUT_S)
        for future in futures.values():
            future.exception(TIMEOUT_S)  # a fuzzed name the broker refuses to delete stays, and is counted
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    groups = [group.group_id for group in listed.valid]
    if groups:
        for future in admin.delete_consumer_groups(groups, request_timeout=TIMEOUT_S).values():
            future.exception(TIMEOUT_S)
    return CreatedState(len(topics), partitions, len(groups))
