"""Classic groups as records of `__consumer_offsets`, in Kafka's own schemas (GroupMetadataKey v2, GroupMetadataValue
v0 to v3), beside the offset commits of `offsets.py`:

    key   int16 version = 2, string group
    value int16 version = 3 (what this broker writes), string protocol_type, int32 generation,
          nullable string protocol, nullable string leader, int64 current_state_timestamp (v2+),
          int32 count, then per member: string member_id, nullable string group_instance_id (v3+), string client_id,
          string client_host, int32 rebalance_timeout (v1+), int32 session_timeout, bytes subscription,
          bytes assignment
    (strings are int16 length + UTF-8, -1 = null; bytes are int32 length + the bytes)
    tombstone: the key with a null value, written when a group is deleted

Versions 0 to 2 lack the fields marked with the version that brought them; reading one gives them Kafka's defaults
(no instance id, the session timeout as rebalance timeout). Encoding only: which group is stored when is the
coordinator's business (`kafkalite.groups.stored_group`).
"""

from __future__ import annotations

import struct
import time

from kafkalite.broker.schema_reader import SchemaReader
from kafkalite.errors import CorruptRecordError
from kafkalite.groups import StoredGroup, StoredMember

GROUP_KEY_VERSION = 2
_VALUE_VERSION = 3


def encode_group_key(group_id: str) -> bytes:
    return struct.pack(">h", GROUP_KEY_VERSION) + _string(group_id)


def decode_group_key(data: bytes) -> str | None:
    """The group id of a group-metadata key; None for another kind of key (an offset commit)."""
    reader = SchemaReader(data, "group metadata")
    (version,) = reader.unpack(">h")
    if version != GROUP_KEY_VERSION:
        return None
    group_id = reader.string()
    if not reader.at_end():
        raise CorruptRecordError(f"group metadata key has {len(data) - reader.pos} bytes after the group id")
    return group_id


def encode_group_value(group: StoredGroup, *, now_ms: int | None = None) -> bytes:
    """The group's GroupMetadataValue v3, stamped with `now_ms` (wall clock) as its current_state_timestamp."""
    stamp = int(time.time() * 1000) if now_ms is None else now_ms
    parts = [
        struct.pack(">h", _VALUE_VERSION),
        _string(group.protocol_type),
        struct.pack(">i", group.generation_id),
        _nullable_string(group.protocol_name),
        _nullable_string(group.leader_id),
        struct.pack(">qi", stamp, len(group.members)),
    ]
    for member in group.members:
        parts += [
            _string(member.member_id),
            _nullable_string(member.group_instance_id),
            _string(member.client_id),
            _string(member.client_host),
            struct.pack(">ii", member.rebalance_timeout_ms, member.session_timeout_ms),
            _bytes(member.subscription),
            _bytes(member.assignment),
        ]
    return b"".join(parts)


def decode_group_value(data: bytes) -> StoredGroup:
    """A GroupMetadataValue of version 0 to 3; CorruptRecordError for another version or a record cut short."""
    reader = SchemaReader(data, "group metadata")
    (version,) = reader.unpack(">h")
    if not 0 <= version <= _VALUE_VERSION:
        raise CorruptRecordError(f"group metadata value version {version} is not supported")
    protocol_type = reader.string()
    (generation,) = reader.unpack(">i")
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    if version >= 2:
        reader.unpack(">q")  # current_state_timestamp: not needed to restore the group
    (count,) = reader.unpack(">i")
    if count < 0:
        raise CorruptRecordError(f"group metadata with {count} members")
    members = []
    for _ in range(count):
        member_id = reader.string()
        instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        (rebalance_timeout,) = reader.unpack(">i") if version >= 1 else (-1,)
        (session_timeout,) = reader.unpack(">i")
        if rebalance_timeout < 0:
            rebalance_timeout = session_timeout
        members.append(
            StoredMember(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                reader.bytes(),
                reader.bytes(),
            )
        )
    if not reader.at_end():
        raise CorruptRecordError(f"group metadata value has {len(data) - reader.pos} bytes after its last field")
    return StoredGroup(protocol_type, generation, protocol, leader, tuple(members))


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _nullable_string(text: str | None) -> bytes:
    return struct.pack(">h", -1) if text is None else _string(text)


def _bytes(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data
