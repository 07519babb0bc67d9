"""What a classic group keeps across a restart: its generation and, when it has members, who they are.

`StoredGroup` is Kafka's GroupMetadataValue as data: the group's protocol type, generation, chosen protocol, leader
and members, each with its ids, timeouts, the subscription it gave for the chosen protocol and the assignment the
leader gave it. The coordinator hands one out whenever the group's stored form changes (`take_to_store()`), and takes
them back at start (`restore()`); the broker writes and reads them as records of `__consumer_offsets`. Pure data: no
encoding here (the broker's `group_records.py` does it), no clock, no I/O.

When a group is stored, as in Kafka:

* a generation completes: the leader's SyncGroup sets the assignments (the group becomes Stable);
* a rebalance ends with nobody in the group (the group becomes Empty, its generation one higher);
* a static member takes over its instance id in a Stable group without a rebalance (its new member id);
* the group is deleted: a tombstone (`None` in place of a `StoredGroup`).

Nothing else is: a member leaving or expiring starts a rebalance, whose end is stored. A restart therefore finds each
group as of its last completed generation. A group stored with members comes back Stable and each member's session
starts again at the restart, so members that are still alive carry on (heartbeats and commits with their generation
succeed) and the others expire after their session timeout, which starts a rebalance as any expiry does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoredMember:
    """One member of a stored group (Kafka's GroupMetadataValue.MemberMetadata)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class StoredGroup:
    """A classic group as of its last completed generation (Kafka's GroupMetadataValue). `protocol_name` and
    `leader_id` are None for a group without members."""

    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    members: tuple[StoredMember, ...] = ()
