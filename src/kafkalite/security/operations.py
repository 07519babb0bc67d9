"""Kafka's table of operations: what each API needs, on which resources, for every API key Kafka defines.

Read it as Kafka's "Operations and Resources on Protocols" table. Each API key has rules; a request is allowed when
every rule that applies (`when`) passes:

- a *whole* rule names one resource from the request (`name`; none = the cluster). Refused, the request is
  answered with that resource type's error code in every error field, and the handler never runs;
- an *items* rule names a resource per entry of a request list (`Items`: the request field, the response field that
  answers it, and which entries it covers). Refused entries are taken out of the request before the handler runs
  and answered with the error code; the rest is served as usual;
- a *listing* rule hides, from a response list, the entries the principal may not see (Metadata of all topics,
  ListGroups), unless it holds `or_cluster` on the cluster.

`or_cluster` names a cluster operation that also grants the rule (CREATE on the cluster creates any topic);
`or_any_topic` an operation that grants it when allowed on some topic (an idempotent producer needs IDEMPOTENT_WRITE
on the cluster or WRITE on any topic). A rule with `disables` does not refuse: it turns that request flag off
(Metadata's allow_auto_topic_creation without CREATE, so describing an unknown topic does not create it).
APIs a single broker never receives (inter-broker and controller calls) need CLUSTER_ACTION on the cluster, so only
super users reach them, and they get Kafka's answer for an unknown API anyway. An API key missing from this table
is refused to everyone but super users.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from kafkalite.security.acls import Operation, ResourceType

TOPIC: Final = ResourceType.TOPIC
GROUP: Final = ResourceType.GROUP
CLUSTER: Final = ResourceType.CLUSTER
TXN: Final = ResourceType.TRANSACTIONAL_ID
TOKEN: Final = ResourceType.DELEGATION_TOKEN
USER: Final = ResourceType.USER
CONFIG_TOPIC: Final = 2  # DescribeConfigs/AlterConfigs resource_type of a topic
CONFIG_BROKER: Final = (4, 8)  # ... of a broker, of a broker logger


@dataclass(frozen=True, slots=True)
class Items:
    """Entries of request list `field`, answered in response list `answers`; `select` picks the entries covered."""

    field: str
    answers: str
    select: Callable[[Any], bool] | None = None

    def of(self, request: Any) -> Iterable[Any]:
        entries = getattr(request, self.field, None) or ()
        return entries if self.select is None else [e for e in entries if self.select(e)]


@dataclass(frozen=True, slots=True)
class Rule:
    operation: Operation
    resource: ResourceType
    name: Callable[[Any], str | Iterable[str] | None] | None = None
    items: Items | None = None
    listing: str | None = None
    when: Callable[[Any], bool] | None = None
    or_cluster: Operation | None = None
    or_any_topic: Operation | None = None
    disables: str | None = None


def item_name(item: Any, topic_names: Callable[[Any], str | None]) -> str | None:
    """The resource an entry names: a plain string, or its name/topic/group id field, or its topic id resolved."""
    if isinstance(item, str):
        return item
    for attribute in ("name", "topic", "resource_name", "group_id", "transactional_id"):
        value = getattr(item, attribute, None)
        if isinstance(value, str) and value:
            return value
    topic_id = getattr(item, "topic_id", None)
    return None if topic_id is None else topic_names(topic_id)


def _attr(name: str) -> Callable[[Any], Any]:
    return lambda request: getattr(request, name, None)


def _has(name: str) -> Callable[[Any], bool]:
    return lambda request: bool(getattr(request, name, None))


def _metadata_names(request: Any) -> Iterable[str]:
    return [t.name for t in request.topics or () if getattr(t, "name", None)]


def _idempotent(request: Any) -> bool:
    return not getattr(request, "transactional_id", None)


def _txn_ids(request: Any) -> Iterable[str]:
    single = getattr(request, "v3_and_below_transactional_id", None)
    if single:
        return [single]
    return [t.transactional_id for t in getattr(request, "transactions", ()) or ()]


def _offset_fetch_groups(request: Any) -> Iterable[str]:
    group = getattr(request, "group_id", None)
    return [group] if group is not None else [g.group_id for g in getattr(request, "groups", ()) or ()]


def _coordinator_keys(key_type: int) -> Callable[[Any], Iterable[str]]:
    def keys(request: Any) -> Iterable[str]:
        if getattr(request, "key_type", 0) != key_type:
            return []
        single = getattr(request, "key", None)
        return [single] if single is not None else list(getattr(request, "coordinator_keys", ()) or ())

    return keys


def _replica(request: Any) -> bool:
    return getattr(request, "replica_id", -1) >= 0


def _consumer(request: Any) -> bool:
    return getattr(request, "replica_id", -1) < 0


def _cluster_action() -> tuple[Rule, ...]:
    return (Rule(Operation.CLUSTER_ACTION, CLUSTER),)


def _cluster(operation: Operation) -> tuple[Rule, ...]:
    return (Rule(operation, CLUSTER),)


def _topics(field: str, answers: str, operation: Operation) -> Rule:
    return Rule(operation, TOPIC, items=Items(field, answers))


def _config_rules(answers: str, topic_op: Operation, cluster_op: Operation) -> tuple[Rule, ...]:
    return (
        Rule(topic_op, TOPIC, items=Items("resources", answers, lambda r: r.resource_type == CONFIG_TOPIC)),
        Rule(cluster_op, CLUSTER, items=Items("resources", answers, lambda r: r.resource_type in CONFIG_BROKER)),
    )


RULES: Final[dict[int, tuple[Rule, ...]]] = {
    0: (  # Produce
        Rule(Operation.WRITE, TXN, name=_attr("transactional_id"), when=_has("transactional_id")),
        _topics("topic_data", "responses", Operation.WRITE),
    ),
    1: (  # Fetch: a follower's fetch is cluster traffic
        Rule(Operation.CLUSTER_ACTION, CLUSTER, when=_replica),
        Rule(Operation.READ, TOPIC, items=Items("topics", "responses"), when=_consumer),
    ),
    2: (_topics("topics", "topics", Operation.DESCRIBE),),  # ListOffsets
    3: (  # Metadata: named topics are refused one by one; "all topics" lists only those the principal may describe
        Rule(Operation.DESCRIBE, TOPIC, items=Items("topics", "topics")),
        Rule(
            Operation.CREATE,
            TOPIC,
            name=_metadata_names,
            when=_has("allow_auto_topic_creation"),
            or_cluster=Operation.CREATE,
            disables="allow_auto_topic_creation",
        ),
        Rule(Operation.DESCRIBE, TOPIC, listing="topics", when=lambda r: r.topics is None or not r.topics),
    ),
    4: _cluster_action(),  # LeaderAndIsr
    5: _cluster_action(),  # StopReplica
    6: _cluster_action(),  # UpdateMetadata
    7: _cluster_action(),  # ControlledShutdown
    8: (Rule(Operation.READ, GROUP, name=_attr("group_id")), _topics("topics", "topics", Operation.READ)),
    9: (  # OffsetFetch
        Rule(Operation.DESCRIBE, GROUP, name=_offset_fetch_groups),
        Rule(Operation.DESCRIBE, TOPIC, items=Items("topics", "topics", lambda t: not isinstance(t, int))),
    ),
    10: (  # FindCoordinator: key_type 0 = group, 1 = transaction
        Rule(Operation.DESCRIBE, GROUP, name=_coordinator_keys(0)),
        Rule(Operation.DESCRIBE, TXN, name=_coordinator_keys(1)),
    ),
    11: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # JoinGroup
    12: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # Heartbeat
    13: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # LeaveGroup
    14: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # SyncGroup
    15: (Rule(Operation.DESCRIBE, GROUP, items=Items("groups", "groups")),),  # DescribeGroups
    16: (Rule(Operation.DESCRIBE, GROUP, listing="groups", or_cluster=Operation.DESCRIBE),),  # ListGroups
    17: (),  # SaslHandshake
    18: (),  # ApiVersions
    19: (Rule(Operation.CREATE, TOPIC, items=Items("topics", "topics"), or_cluster=Operation.CREATE),),  # CreateTopics
    20: (  # DeleteTopics: names until v5, entries (name or id) from v6
        Rule(Operation.DELETE, TOPIC, items=Items("topic_names", "responses")),
        Rule(Operation.DELETE, TOPIC, items=Items("topics", "responses")),
    ),
    21: (_topics("topics", "topics", Operation.DELETE),),  # DeleteRecords
    22: (  # InitProducerId
        Rule(Operation.WRITE, TXN, name=_attr("transactional_id"), when=_has("transactional_id")),
        Rule(Operation.IDEMPOTENT_WRITE, CLUSTER, when=_idempotent, or_any_topic=Operation.WRITE),
    ),
    23: (_topics("topics", "topics", Operation.DESCRIBE),),  # OffsetForLeaderEpoch
    24: (  # AddPartitionsToTxn
        Rule(Operation.WRITE, TXN, name=_txn_ids),
        _topics("v3_and_below_topics", "results_by_topic_v3_and_below", Operation.WRITE),
    ),
    25: (  # AddOffsetsToTxn
        Rule(Operation.WRITE, TXN, name=_attr("transactional_id")),
        Rule(Operation.READ, GROUP, name=_attr("group_id")),
    ),
    26: (Rule(Operation.WRITE, TXN, name=_attr("transactional_id")),),  # EndTxn
    27: _cluster_action(),  # WriteTxnMarkers
    28: (  # TxnOffsetCommit
        Rule(Operation.WRITE, TXN, name=_attr("transactional_id")),
        Rule(Operation.READ, GROUP, name=_attr("group_id")),
        _topics("topics", "topics", Operation.READ),
    ),
    29: _cluster(Operation.DESCRIBE),  # DescribeAcls
    30: _cluster(Operation.ALTER),  # CreateAcls
    31: _cluster(Operation.ALTER),  # DeleteAcls
    32: _config_rules("results", Operation.DESCRIBE_CONFIGS, Operation.DESCRIBE_CONFIGS),  # DescribeConfigs
    33: _config_rules("responses", Operation.ALTER_CONFIGS, Operation.ALTER_CONFIGS),  # AlterConfigs
    34: _cluster(Operation.ALTER),  # AlterReplicaLogDirs
    35: _cluster(Operation.DESCRIBE),  # DescribeLogDirs
    36: (),  # SaslAuthenticate
    37: (_topics("topics", "results", Operation.ALTER),),  # CreatePartitions
    38: (),  # CreateDelegationToken: a principal creates tokens for itself (KafkaLite issues none)
    39: (Rule(Operation.DESCRIBE, TOKEN),),  # RenewDelegationToken: owners and renewers only; no tokens here
    40: (Rule(Operation.DESCRIBE, TOKEN),),  # ExpireDelegationToken
    41: (Rule(Operation.DESCRIBE, TOKEN),),  # DescribeDelegationToken
    42: (Rule(Operation.DELETE, GROUP, items=Items("groups_names", "results")),),  # DeleteGroups
    43: _cluster(Operation.ALTER),  # ElectLeaders
    44: _config_rules("responses", Operation.ALTER_CONFIGS, Operation.ALTER_CONFIGS),  # IncrementalAlterConfigs
    45: _cluster(Operation.ALTER),  # AlterPartitionReassignments
    46: _cluster(Operation.DESCRIBE),  # ListPartitionReassignments
    47: (Rule(Operation.DELETE, GROUP, name=_attr("group_id")), _topics("topics", "topics", Operation.READ)),
    48: _cluster(Operation.DESCRIBE_CONFIGS),  # DescribeClientQuotas
    49: _cluster(Operation.ALTER_CONFIGS),  # AlterClientQuotas
    50: _cluster(Operation.DESCRIBE),  # DescribeUserScramCredentials
    51: _cluster(Operation.ALTER),  # AlterUserScramCredentials
    52: _cluster_action(),  # Vote
    53: _cluster_action(),  # BeginQuorumEpoch
    54: _cluster_action(),  # EndQuorumEpoch
    55: _cluster(Operation.DESCRIBE),  # DescribeQuorum
    56: _cluster_action(),  # AlterPartition
    57: _cluster(Operation.ALTER),  # UpdateFeatures
    58: _cluster_action(),  # Envelope
    59: _cluster_action(),  # FetchSnapshot
    60: (),  # DescribeCluster: answered to every authenticated client, as Kafka does
    61: (_topics("topics", "topics", Operation.READ),),  # DescribeProducers
    62: _cluster_action(),  # BrokerRegistration
    63: _cluster_action(),  # BrokerHeartbeat
    64: _cluster(Operation.ALTER),  # UnregisterBroker
    65: (Rule(Operation.DESCRIBE, TXN, items=Items("transactional_ids", "transaction_states")),),
    66: (Rule(Operation.DESCRIBE, TXN, listing="transaction_states"),),  # ListTransactions
    67: _cluster_action(),  # AllocateProducerIds
    68: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # ConsumerGroupHeartbeat
    69: (Rule(Operation.DESCRIBE, GROUP, items=Items("group_ids", "groups")),),  # ConsumerGroupDescribe
    70: _cluster_action(),  # ControllerRegistration
    71: (),  # GetTelemetrySubscriptions
    72: (),  # PushTelemetry
    73: _cluster_action(),  # AssignReplicasToDirs
    74: _cluster(Operation.DESCRIBE_CONFIGS),  # ListConfigResources
    75: (_topics("topics", "topics", Operation.DESCRIBE),),  # DescribeTopicPartitions
    76: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # ShareGroupHeartbeat
    77: (Rule(Operation.DESCRIBE, GROUP, items=Items("group_ids", "groups")),),  # ShareGroupDescribe
    78: (Rule(Operation.READ, GROUP, name=_attr("group_id")), _topics("topics", "responses", Operation.READ)),
    79: (Rule(Operation.READ, GROUP, name=_attr("group_id")), _topics("topics", "responses", Operation.READ)),
    80: _cluster(Operation.ALTER),  # AddRaftVoter
    81: _cluster(Operation.ALTER),  # RemoveRaftVoter
    82: _cluster_action(),  # UpdateRaftVoter
    83: _cluster_action(),  # InitializeShareGroupState
    84: _cluster_action(),  # ReadShareGroupState
    85: _cluster_action(),  # WriteShareGroupState
    86: _cluster_action(),  # DeleteShareGroupState
    87: _cluster_action(),  # ReadShareGroupStateSummary
    88: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # StreamsGroupHeartbeat
    89: (Rule(Operation.DESCRIBE, GROUP, items=Items("group_ids", "groups")),),  # StreamsGroupDescribe
    90: (Rule(Operation.DESCRIBE, GROUP, items=Items("groups", "groups")),),  # DescribeShareGroupOffsets
    91: (Rule(Operation.READ, GROUP, name=_attr("group_id")),),  # AlterShareGroupOffsets
    92: (Rule(Operation.DELETE, GROUP, name=_attr("group_id")),),  # DeleteShareGroupOffsets
}
