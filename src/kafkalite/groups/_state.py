"""The life cycle of one consumer group: its states, the events that move it, and the rules (Kafka's classic protocol).

Every state change of a group goes through `transition()` below, checked against `TRANSITIONS`; nothing else in
`kafkalite.groups` assigns a group's state. The table is Kafka's `GroupState.validPreviousStates`, turned around::

    Empty ──PREPARE_REBALANCE──► PreparingRebalance ──JOIN_COMPLETED──► CompletingRebalance ──ASSIGNMENT_SET──► Stable
      ▲                            │        ▲                                │                                  │
      └────────JOIN_COMPLETED_EMPTY┘        └────────PREPARE_REBALANCE───────┴──────────PREPARE_REBALANCE───────┘
    Empty ──DELETE──► Dead   (Dead is final: the group is dropped from the coordinator)

Rules (each is what Apache Kafka's GroupCoordinator does; `coordinator.py` and `rebalance.py` implement them):

1. A group is created by the first JoinGroup with an empty member id (or by a standalone offset commit) in Empty.
   Its protocol type is fixed by the first member; a joiner must use the same type and share at least one protocol
   name with every current member, else INCONSISTENT_GROUP_PROTOCOL (23).
2. A rebalance starts (PREPARE_REBALANCE) when a new member joins, a member changes its metadata, the leader rejoins
   a Stable group, or a member leaves / fails its session / misses its SyncGroup. Starting one from
   CompletingRebalance answers every pending SyncGroup with REBALANCE_IN_PROGRESS (27).
3. PreparingRebalance ends (JOIN_COMPLETED) as soon as every member has a JoinGroup pending and no member is still
   pending after MEMBER_ID_REQUIRED, or when the rebalance timeout (the largest member's) expires; dynamic members
   that did not rejoin by then are removed. From Empty, the first rebalance waits `initial_rebalance_delay_ms`
   instead (extended by the same delay while new members keep arriving, up to the rebalance timeout), so that
   consumers starting together land in one generation. If nobody rejoined, the group ends Empty
   (JOIN_COMPLETED_EMPTY); either way the generation id goes up by one.
4. At JOIN_COMPLETED the protocol is chosen by vote: each member votes for its most preferred protocol among those all
   members support; the most votes wins (ties: the protocol voted for by the earliest member). The leader is kept if
   it rejoined, else the first member that did. Only the leader's JoinGroup reply lists the members and metadata.
5. In CompletingRebalance followers' SyncGroups wait; the leader's SyncGroup supplies the assignments (members it
   left out get empty bytes), answers every waiting SyncGroup, and makes the group Stable (ASSIGNMENT_SET). Members
   must send SyncGroup within the rebalance timeout of the join completing, else they are removed and the group
   rebalances again.
6. Fencing: a request naming a member the group does not have gets UNKNOWN_MEMBER_ID (25); a known member with another
   generation gets ILLEGAL_GENERATION (22); a static member (group_instance_id) whose member id was replaced gets
   FENCED_INSTANCE_ID (82). Heartbeats in PreparingRebalance get REBALANCE_IN_PROGRESS (27).
7. A member is removed when now ≥ last heartbeat + session timeout, except while it has a JoinGroup or SyncGroup
   pending (the coordinator itself holds it up); a new member whose first JoinGroup is pending is removed after
   `NEW_MEMBER_JOIN_TIMEOUT_MS` (Kafka's 5 minutes). Completing a member's pending request restarts its session.
8. Only an Empty group can be deleted (else NON_EMPTY_GROUP, 68). Dead is final.
"""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    """A group's state; the value is the name Kafka's DescribeGroups and ListGroups use."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class GroupEvent(enum.Enum):
    PREPARE_REBALANCE = enum.auto()
    JOIN_COMPLETED = enum.auto()
    JOIN_COMPLETED_EMPTY = enum.auto()
    ASSIGNMENT_SET = enum.auto()
    DELETE = enum.auto()


TRANSITIONS: dict[GroupState, dict[GroupEvent, GroupState]] = {
    GroupState.EMPTY: {
        GroupEvent.PREPARE_REBALANCE: GroupState.PREPARING_REBALANCE,
        GroupEvent.DELETE: GroupState.DEAD,
    },
    GroupState.PREPARING_REBALANCE: {
        GroupEvent.JOIN_COMPLETED: GroupState.COMPLETING_REBALANCE,
        GroupEvent.JOIN_COMPLETED_EMPTY: GroupState.EMPTY,
    },
    GroupState.COMPLETING_REBALANCE: {
        GroupEvent.PREPARE_REBALANCE: GroupState.PREPARING_REBALANCE,
        GroupEvent.ASSIGNMENT_SET: GroupState.STABLE,
    },
    GroupState.STABLE: {
        GroupEvent.PREPARE_REBALANCE: GroupState.PREPARING_REBALANCE,
    },
    GroupState.DEAD: {},
}


class IllegalTransitionError(RuntimeError):
    """A bug in the coordinator: it tried a transition the table does not allow (never a client's fault)."""


def transition(state: GroupState, event: GroupEvent) -> GroupState:
    """The state after `event` in `state`; raises IllegalTransitionError when the table has no such edge."""
    try:
        return TRANSITIONS[state][event]
    except KeyError:
        raise IllegalTransitionError(f"no transition from {state.value} on {event.name}") from None
