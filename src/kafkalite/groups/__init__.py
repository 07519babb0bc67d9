"""The consumer-group coordinator (Kafka's classic protocol) as a pure state machine, plus assignors.

`GroupCoordinator` (coordinator.py) holds every group and answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups and the OffsetCommit membership check; the rules and the state table are in
`_state.py`; the rebalance, timers firing and the reply outbox in `rebalance.py`; members, groups and their deadlines in
`membership.py`; results and error codes in `results.py`; range/roundrobin/sticky in `assignors.py`; the "consumer"
protocol bytes in `consumer_protocol.py`; what a group keeps across a restart in `stored_group.py`. KIP-848 consumer
groups (`group.protocol=consumer`) have their own coordinator beside it: `consumer_coordinator.py` (heartbeat, describe,
offsets), `consumer_group.py` (epochs, states, reconciliation) and `server_assignors.py` (uniform, range). This package
imports nothing of KafkaLite's but `kafkalite.errors`: no asyncio, no clock, no storage. Time is passed in as `now_ms`.

Importing this package imports none of its modules: each name below loads its own module when first asked for
(`from kafkalite.groups import StoredGroup` loads `stored_group.py` alone). A broker with no group stored starts
without the coordinators, and loads them on its first group request (`Broker.groups`).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
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

_MODULE_OF: dict[str, str] = {  # name -> the module of this package it is imported from
    "GroupState": "_state",
    "ASSIGNORS": "assignors",
    "Assignor": "assignors",
    "MemberSubscription": "assignors",
    "range_assign": "assignors",
    "roundrobin_assign": "assignors",
    "sticky_assign": "assignors",
    "ConsumerGroupConfig": "consumer_coordinator",
    "ConsumerGroupCoordinator": "consumer_coordinator",
    "DescribedConsumerGroup": "consumer_coordinator",
    "DescribedMember": "consumer_coordinator",
    "HeartbeatRequest": "consumer_coordinator",
    "TopicImage": "consumer_coordinator",
    "ConsumerGroup": "consumer_group",
    "ConsumerGroupState": "consumer_group",
    "ConsumerMember": "consumer_group",
    "MemberState": "consumer_group",
    "Assignment": "consumer_protocol",
    "StickyUserData": "consumer_protocol",
    "Subscription": "consumer_protocol",
    "decode_assignment": "consumer_protocol",
    "decode_sticky_user_data": "consumer_protocol",
    "decode_subscription": "consumer_protocol",
    "encode_assignment": "consumer_protocol",
    "encode_sticky_user_data": "consumer_protocol",
    "encode_subscription": "consumer_protocol",
    "GroupConfig": "coordinator",
    "GroupCoordinator": "coordinator",
    "NEW_MEMBER_JOIN_TIMEOUT_MS": "coordinator",
    "StoreEntry": "coordinator",
    "Takeover": "membership",
    "CompletedReply": "results",
    "ErrorCode": "results",
    "GroupDescription": "results",
    "GroupListing": "results",
    "HeartbeatResult": "results",
    "JoinMember": "results",
    "JoinPending": "results",
    "JoinResult": "results",
    "LeaveResult": "results",
    "LeavingMember": "results",
    "MemberDescription": "results",
    "MemberLeaveResult": "results",
    "SyncPending": "results",
    "SyncResult": "results",
    "StoredGroup": "stored_group",
    "StoredMember": "stored_group",
}

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


if not _typing.TYPE_CHECKING:  # for mypy the names are the imports above, so a misspelt one is still an error

    def __getattr__(name: str) -> object:
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # found once: later lookups do not come back here
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
