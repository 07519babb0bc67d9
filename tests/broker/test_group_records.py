"""Classic groups as `__consumer_offsets` records: Kafka's GroupMetadataKey v2 and GroupMetadataValue v0 to v3, byte
for byte, and a clear error for a record that is not one."""

from __future__ import annotations

import struct

import pytest

from kafkalite.broker.group_records import decode_group_key, decode_group_value, encode_group_key, encode_group_value
from kafkalite.broker.offsets import encode_key
from kafkalite.errors import CorruptRecordError
from kafkalite.groups import StoredGroup, StoredMember

GROUP = StoredGroup(
    protocol_type="consumer",
    generation_id=5,
    protocol_name="range",
    leader_id="m-1",
    members=(StoredMember("m-1", "i", "c", "/h", 300, 45, b"S", b"AB"),),
)

# GroupMetadataValue v3 of GROUP, field by field as Kafka's schema lays it out.
GROUP_V3 = b"".join(
    [
        b"\x00\x03",  # version 3
        b"\x00\x08consumer",  # protocol type
        b"\x00\x00\x00\x05",  # generation
        b"\x00\x05range",  # protocol
        b"\x00\x03m-1",  # leader
        b"\x00\x00\x00\x00\x00\x00\x01\x02",  # current state timestamp
        b"\x00\x00\x00\x01",  # one member:
        b"\x00\x03m-1",  # member id
        b"\x00\x01i",  # group instance id
        b"\x00\x01c",  # client id
        b"\x00\x02/h",  # client host
        b"\x00\x00\x01\x2c",  # rebalance timeout 300
        b"\x00\x00\x00\x2d",  # session timeout 45
        b"\x00\x00\x00\x01S",  # subscription
        b"\x00\x00\x00\x02AB",  # assignment
    ]
)


def test_the_value_is_kafkas_group_metadata_value_v3_byte_for_byte() -> None:
    assert encode_group_value(GROUP, now_ms=0x0102) == GROUP_V3
    assert decode_group_value(GROUP_V3) == GROUP


def test_the_key_is_kafkas_group_metadata_key_v2_and_offset_keys_are_told_apart() -> None:
    assert encode_group_key("g") == bytes.fromhex("0002") + b"\x00\x01g"
    assert decode_group_key(encode_group_key("orders-app")) == "orders-app"
    assert decode_group_key(encode_key(("g", "orders", 0))) is None


def test_an_empty_group_has_null_protocol_and_leader() -> None:
    empty = StoredGroup("consumer", 2, None, None, ())
    encoded = encode_group_value(empty, now_ms=1)
    assert encoded.count(b"\xff\xff") == 2
    assert decode_group_value(encoded) == empty
    anonymous = StoredGroup("", 1, "p", "m", (StoredMember("m", None, "", "", 1, 1, b"", b""),))
    assert decode_group_value(encode_group_value(anonymous)) == anonymous


def _older(version: int) -> bytes:
    """GROUP as Kafka wrote it at an older version: no instance id before v3, no timestamp before v2, no rebalance
    timeout before v1."""
    member = b"\x00\x03m-1"
    if version >= 3:
        member += b"\x00\x01i"
    member += b"\x00\x01c\x00\x02/h"
    if version >= 1:
        member += struct.pack(">i", 300)
    member += struct.pack(">i", 45) + b"\x00\x00\x00\x01S\x00\x00\x00\x02AB"
    head = struct.pack(">h", version) + b"\x00\x08consumer" + struct.pack(">i", 5) + b"\x00\x05range\x00\x03m-1"
    if version >= 2:
        head += struct.pack(">q", 7)
    return head + struct.pack(">i", 1) + member


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_older_versions_are_read_with_kafkas_defaults(version: int) -> None:
    decoded = decode_group_value(_older(version))
    member = decoded.members[0]
    assert member.group_instance_id == ("i" if version >= 3 else None)
    assert member.rebalance_timeout_ms == (300 if version >= 1 else 45)  # v0: the session timeout, as Kafka does
    assert (decoded.generation_id, decoded.protocol_name, member.subscription, member.assignment) == (
        5,
        "range",
        b"S",
        b"AB",
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x04" + GROUP_V3[2:], "version 4 is not supported"),
        (GROUP_V3[:-1], "overruns"),
        (GROUP_V3[:14], "ends at byte 14"),
        (GROUP_V3 + b"\x00", "1 bytes after its last field"),
        (GROUP_V3[:2] + b"\xff\xff" + GROUP_V3[12:], "null string"),
        (GROUP_V3[:2] + b"\x00\x02\xff\xfe" + GROUP_V3[12:], "not UTF-8"),
        (GROUP_V3[:36] + b"\xff\xff\xff\xff", "-1 members"),
    ],
)
def test_a_record_that_is_not_group_metadata_is_a_corrupt_record(data: bytes, message: str) -> None:
    with pytest.raises(CorruptRecordError, match=message):
        decode_group_value(data)


def test_a_group_key_with_bytes_after_the_group_id_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="1 bytes after the group id"):
        decode_group_key(encode_group_key("g") + b"\x00")
