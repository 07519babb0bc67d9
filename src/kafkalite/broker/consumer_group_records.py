"""KIP-848 consumer groups as records of `__consumer_offsets`, in Kafka's own schemas. A key is an int16 record type
and the key's fields (int16-length strings); a value is an int16 version (0) and the value's fields in the flexible
encoding (unsigned-varint lengths + 1, 16-byte UUIDs, a tag buffer after each struct):

    3 ConsumerGroupMetadata                 key group        value epoch int32
    4 ConsumerGroupPartitionMetadata        key group        value [topic_id uuid, topic_name, num_partitions int32,
                                                                    partition_metadata []] (the subscribed topics)
    5 ConsumerGroupMemberMetadata           key group member value instance_id?, rack_id?, client_id, client_host,
                                                                   [subscribed_topic_names], subscribed_topic_regex?,
                                                                   rebalance_timeout_ms int32, server_assignor?
    6 ConsumerGroupTargetAssignmentMetadata key group        value assignment_epoch int32
    7 ConsumerGroupTargetAssignmentMember   key group member value [topic_id uuid, [partitions int32]]
    8 ConsumerGroupCurrentMemberAssignment  key group member value member_epoch int32, previous_member_epoch int32,
                                                                   state int8, [assigned], [pending revocation]
    (? = nullable; a null value is a tombstone: the record's group or member is gone)

`group_records` gives every record of one group as Kafka would have written it last; the group service writes the
difference from what the log holds. `rebuild` turns the latest record of every key back into groups. Tagged fields
this broker does not write (the metadata hash, classic member metadata) are skipped when read.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kafkalite import groups  # its names load their module on first use: a broker reads keys here at start
from kafkalite.broker.schema_reader import SchemaReader
from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.wire import encode_unsigned_varint

if TYPE_CHECKING:
    from kafkalite.groups import ConsumerGroup, ConsumerMember

METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_MEMBER = 3, 4, 5, 6, 7, 8
RECORD_TYPES = frozenset(range(METADATA, CURRENT_MEMBER + 1))
_VALUE_VERSION = 0
_STATE_CODES = {"stable": 0, "unrevoked_partitions": 1, "unreleased_partitions": 2}  # by `MemberState` value
_STATES = {code: state for state, code in _STATE_CODES.items()}

Records = dict[bytes, bytes]
"""Key bytes → value bytes."""


def record_type(key: bytes) -> int | None:
    """The record type of a `__consumer_offsets` key when it is one of a consumer group's, else None."""
    if len(key) < 2:
        return None
    (kind,) = struct.unpack_from(">h", key, 0)
    return kind if kind in RECORD_TYPES else None


def group_records(group: ConsumerGroup, members: Iterable[str] | None = None) -> Records:
    """The records of `group` as of now: every one, or (`members` given) the group's own three and those of the
    named members that are in it."""
    gid = _string(group.group_id)
    records = {
        _key(METADATA, gid): _value(struct.pack(">i", group.group_epoch)),
        _key(PARTITION_METADATA, gid): _value(
            _array(
                topic_id.bytes + _compact(name) + struct.pack(">i", count) + _array([]) + b"\x00"
                for name, (topic_id, count) in sorted(group.subscription_metadata.items())
            )
        ),
        _key(TARGET_METADATA, gid): _value(struct.pack(">i", group.assignment_epoch)),
    }
    chosen = group.members.values() if members is None else [group.members[m] for m in members if m in group.members]
    for member in chosen:
        mid = _string(member.member_id)
        records[_key(MEMBER_METADATA, gid, mid)] = _value(
            _compact(member.instance_id)
            + _compact(member.rack_id)
            + _compact(member.client_id)
            + _compact(member.client_host)
            + _array(_compact(name) for name in member.subscribed_topic_names)
            + _compact(member.subscribed_topic_regex)
            + struct.pack(">i", member.rebalance_timeout_ms)
            + _compact(member.server_assignor)
        )
        target = group.target.get(member.member_id)
        if target is not None:
            records[_key(TARGET_MEMBER, gid, mid)] = _value(_partitions(target.items()))
        records[_key(CURRENT_MEMBER, gid, mid)] = _value(
            struct.pack(">iib", member.member_epoch, member.previous_member_epoch, _STATE_CODES[member.state.value])
            + _partitions(_by_topic(member.assigned))
            + _partitions(_by_topic(member.pending_revocation))
        )
    return records


def record_group_id(key: bytes) -> str | None:
    """The group id of a consumer-group record's key; None when the key cannot be read."""
    try:
        return _key_fields(key)[1]
    except CorruptRecordError:
        return None


def rebuild(records: Mapping[bytes, bytes]) -> tuple[dict[str, ConsumerGroup], dict[str, str]]:
    """The groups the latest records describe (each key's last value; tombstones already dropped), and what could
    not be read: group id (or, for a key that cannot be read, the key's first bytes) -> why. A record that cannot be
    read drops its group alone. A group needs its metadata record, a member its member metadata; anything else found
    alone is left out."""
    by_group: dict[str, list[tuple[int, str, bytes]]] = {}
    unreadable: dict[str, str] = {}
    for key, value in records.items():
        if record_type(key) is None:
            continue
        try:
            kind, group_id, member_id = _key_fields(key)
        except CorruptRecordError as exc:
            unreadable[key[:40].hex()] = str(exc)
            continue
        by_group.setdefault(group_id, []).append((kind, member_id, value))
    rebuilt: dict[str, ConsumerGroup] = {}
    for group_id, entries in by_group.items():
        try:
            group = _rebuild_group(group_id, entries)
        except CorruptRecordError as exc:
            unreadable[group_id] = str(exc)
            continue
        if group is not None:
            rebuilt[group_id] = group
    return rebuilt, unreadable


def _key_fields(key: bytes) -> tuple[int, str, str]:
    """(record type, group id, member id or "") of a consumer-group record's key."""
    reader = SchemaReader(key, "consumer group key")
    (kind,) = reader.unpack(">h")
    group_id = reader.string()
    member_id = reader.string() if kind in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_MEMBER) else ""
    if not reader.at_end():
        raise CorruptRecordError(f"consumer group key has {len(key) - reader.pos} bytes after its fields")
    return kind, group_id, member_id


def _rebuild_group(group_id: str, entries: list[tuple[int, str, bytes]]) -> ConsumerGroup | None:
    group: ConsumerGroup | None = None
    members: dict[str, ConsumerMember] = {}
    rest: list[tuple[int, str, SchemaReader]] = []
    for kind, member_id, value in entries:
        reader = SchemaReader(value, "consumer group")
        (version,) = reader.unpack(">h")
        if version != _VALUE_VERSION:
            raise CorruptRecordError(f"consumer group record type {kind} version {version} is not supported")
        if kind == METADATA:
            (epoch,) = reader.unpack(">i")
            group = groups.ConsumerGroup(group_id, group_epoch=epoch)
        elif kind == MEMBER_METADATA:
            members[member_id] = groups.ConsumerMember(
                member_id=member_id,
                instance_id=_nullable(reader),
                rack_id=_nullable(reader),
                client_id=reader.compact_string(),
                client_host=reader.compact_string(),
                subscribed_topic_names=tuple(reader.compact_string() for _ in range(_count(reader))),
                subscribed_topic_regex=_nullable(reader),
                rebalance_timeout_ms=reader.unpack(">i")[0],
                server_assignor=_nullable(reader),
            )
        else:
            rest.append((kind, member_id, reader))
    if group is None:
        return None
    for member in members.values():
        group.add(member)
    for kind, member_id, reader in rest:
        if kind == PARTITION_METADATA:
            topics = {}
            for _ in range(_count(reader)):
                topic_id = uuid.UUID(bytes=reader.take(16))
                name = reader.compact_string()
                (count,) = reader.unpack(">i")
                for _ in range(_count(reader)):  # partition metadata (racks): not used here
                    reader.unpack(">i")
                    for _ in range(_count(reader)):
                        reader.compact_string()
                    reader.tags()
                reader.tags()
                topics[name] = (topic_id, count)
            group.subscription_metadata = topics
        elif kind == TARGET_METADATA:
            (group.assignment_epoch,) = reader.unpack(">i")
        elif member_id in group.members:
            if kind == TARGET_MEMBER:
                group.target[member_id] = {t: frozenset(ps) for t, ps in _read_partitions(reader)}
            else:
                member = group.members[member_id]
                member.member_epoch, member.previous_member_epoch, state = reader.unpack(">iib")
                if state not in _STATES:
                    raise CorruptRecordError(f"member {member_id} has an unknown state {state}")
                member.state = groups.MemberState(_STATES[state])
                member.assigned = {(t, p) for t, ps in _read_partitions(reader) for p in ps}
                member.pending_revocation = {(t, p) for t, ps in _read_partitions(reader) for p in ps}
    return group


def _key(kind: int, *fields: bytes) -> bytes:
    return struct.pack(">h", kind) + b"".join(fields)


def _value(body: bytes) -> bytes:
    return struct.pack(">h", _VALUE_VERSION) + body + b"\x00"  # the value's (empty) tag buffer


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _compact(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    data = text.encode()
    return encode_unsigned_varint(len(data) + 1) + data


def _array(items: Iterable[bytes]) -> bytes:
    parts = list(items)
    return encode_unsigned_varint(len(parts) + 1) + b"".join(parts)


def _by_topic(partitions: Iterable[tuple[uuid.UUID, int]]) -> list[tuple[uuid.UUID, Iterable[int]]]:
    topics: dict[uuid.UUID, list[int]] = {}
    for topic_id, partition in partitions:
        topics.setdefault(topic_id, []).append(partition)
    return list(topics.items())


def _partitions(topics: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> bytes:
    """[topic_id uuid, [partitions int32]] with a tag buffer per topic, sorted for a stable encoding."""
    entries = []
    for topic_id, partitions in sorted(topics, key=lambda item: item[0].bytes):
        ordered = sorted(partitions)
        entries.append(
            topic_id.bytes
            + encode_unsigned_varint(len(ordered) + 1)
            + struct.pack(f">{len(ordered)}i", *ordered)
            + b"\x00"
        )
    return _array(entries)


def _count(reader: SchemaReader) -> int:
    count = reader.uvarint() - 1
    if count < 0:
        raise CorruptRecordError("a null array where a consumer group record needs one")
    return count


def _nullable(reader: SchemaReader) -> str | None:
    length = reader.uvarint() - 1
    if length < 0:
        return None
    try:
        return reader.take(length).decode()
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(f"consumer group string is not UTF-8: {exc}") from None


def _read_partitions(reader: SchemaReader) -> list[tuple[uuid.UUID, list[int]]]:
    topics = []
    for _ in range(_count(reader)):
        topic_id = uuid.UUID(bytes=reader.take(16))
        count = _count(reader)
        topics.append((topic_id, list(reader.unpack(f">{count}i"))))
        reader.tags()
    return topics
