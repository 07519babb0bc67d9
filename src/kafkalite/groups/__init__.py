"""The consumer-group coordinator (Kafka's classic protocol) as a pure state machine, plus assignors.

`GroupCoordinator` (coordinator.py) holds every group and answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups and the OffsetCommit membership check; the rules and the state table are in
`_state.py`; the rebalance, timers firing and the reply outbox in `rebalance.py`; members, groups and their deadlines in
`membership.py`; results and error codes in `results.py`; range/roundrobin/sticky in `assignors.py`; the "consumer"
protocol bytes in `consumer_protocol.py`; what a group keeps across a restart in `stored_group.py`. KIP-848 consumer
groups (`group.protocol=consumer`) have their own coordinator beside it: `consumer_coordinator.py` (heartbeat, describe,
offsets), `consumer_group.py` (epochs, states, reconciliation) and `server_assignors.py` (uniform, range). This package
imports nothing of KafkaLite's but `kafkalite.errors`: no asyncio, no clock, no storage. Time is passed in as `now_ms`.
"""

from kafkalite.groups._state import GroupState
from kafkalite.groups.assignors import (
    ASSIGNORS,
    Assignor,
    MemberSubscription,
    range_assign,
    roundrobin_assign,
    sticky_assign,
)
from kafkalite.groups.consumer_coordinator import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    DescribedConsumerGroup,
    DescribedMember,
    HeartbeatRequest,
    TopicImage,
)
from kafkalite.groups.consumer_group import ConsumerGroup, ConsumerGroupState, ConsumerMember, MemberState
from kafkalite.groups.consumer_protocol import (
    Assignment,
    StickyUserData,
    Subscription,
    decode_assignment,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_sticky_user_data,
    encode_subscription,
)
from kafkalite.groups.coordinator import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig, GroupCoordinator, StoreEntry
from kafkalite.groups.membership import Takeover
from kafkalite.groups.results import (
    CompletedReply,
    ErrorCode,
    GroupDescription,
    GroupListing,
    HeartbeatResult,
    JoinMember,
    JoinPending,
    JoinResult,
    LeaveResult,
    LeavingMember,
    MemberDescription,
    MemberLeaveResult,
    SyncPending,
    SyncResult,
)
from kafkalite.groups.stored_group import StoredGroup, StoredMember

__all__ = [
    "ASSIGNORS",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "Assignment",
    "Assignor",
    "CompletedReply",
    "ConsumerGroup",
    "ConsumerGroupConfig",
    "ConsumerGroupCoordinator",
    "ConsumerGroupState",
    "ConsumerMember",
    "DescribedConsumerGroup",
    "DescribedMember",
    "ErrorCode",
    "GroupConfig",
    "GroupCoordinator",
    "GroupDescription",
    "GroupListing",
    "GroupState",
    "HeartbeatRequest",
    "HeartbeatResult",
    "JoinMember",
    "JoinPending",
    "JoinResult",
    "LeaveResult",
    "LeavingMember",
    "MemberDescription",
    "MemberLeaveResult",
    "MemberState",
    "MemberSubscription",
    "StickyUserData",
    "StoreEntry",
    "StoredGroup",
    "StoredMember",
    "Subscription",
    "SyncPending",
    "SyncResult",
    "Takeover",
    "TopicImage",
    "decode_assignment",
    "decode_sticky_user_data",
    "decode_subscription",
    "encode_assignment",
    "encode_sticky_user_data",
    "encode_subscription",
    "range_assign",
    "roundrobin_assign",
    "sticky_assign",
]
