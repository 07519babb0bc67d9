"""What the coordinator answers: Kafka error codes and one frozen result type per group API.

Each result carries every field the matching response needs at any version (JoinGroup v0-v9, SyncGroup v0-v5,
Heartbeat v0-v4, LeaveGroup v0-v5, DescribeGroups v0-v5, ListGroups v0-v4); handlers copy the fields their version
has. Error results keep Kafka's placeholders: generation -1, leader "", protocol name None (null on the wire).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeAlias


class ErrorCode(enum.IntEnum):
    """The Kafka error codes the group coordinator answers with."""

    NONE = 0
    COORDINATOR_NOT_AVAILABLE = 15
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128


NO_GENERATION = -1
NO_LEADER = ""


@dataclass(frozen=True, slots=True)
class JoinMember:
    """One member as the leader's JoinGroup reply lists it: metadata is for the chosen protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error_code: int
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = NO_LEADER
    members: tuple[JoinMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class JoinPending:
    """The JoinGroup waits for the rebalance; its JoinResult comes out of `take_completed()` under this ticket."""

    ticket: int


@dataclass(frozen=True, slots=True)
class SyncResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class SyncPending:
    """The SyncGroup waits for the leader's; its SyncResult comes out of `take_completed()` under this ticket."""

    ticket: int


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error_code: int


@dataclass(frozen=True, slots=True)
class LeavingMember:
    """LeaveGroup input: v0-v2 name one member id; v3+ a batch, and a static member may be named by instance id alone
    (member_id "")."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemberLeaveResult:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True, slots=True)
class LeaveResult:
    """Top-level error plus one entry per member (v3+). For v0-v2 answer `members[0].error_code` at the top."""

    error_code: int
    members: tuple[MemberLeaveResult, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """DescribeGroups for one group. A group the coordinator does not know is described as state "Dead" with no
    members, as Kafka does; metadata and assignments are filled in only while the group is Stable."""

    group_id: str
    error_code: int
    state: str
    protocol_type: str
    protocol_name: str
    members: tuple[MemberDescription, ...] = ()
    generation_id: int = NO_GENERATION  # not on the wire; for the broker's and tests' own checks


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"  # ListGroups v5: "classic", or "consumer" for a KIP-848 group


CompletedReply: TypeAlias = JoinResult | SyncResult
"""What `GroupCoordinator.take_completed()` hands back for a ticket."""
