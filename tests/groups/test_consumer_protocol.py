"""ConsumerProtocol bytes: round trips that consume every byte, Kafka's layout, and truncation."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import GroupError
from kafkalite.groups import (
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

names = st.text(min_size=1, max_size=10)
partitions = st.integers(0, 2**31 - 1)
topic_partitions = st.dictionaries(names, st.lists(partitions, min_size=1, max_size=4), max_size=4).map(
    lambda d: tuple((t, p) for t, ps in d.items() for p in ps)
)
maybe_bytes = st.none() | st.binary(max_size=20)


@st.composite
def subscriptions(draw: st.DrawFn) -> tuple[int, Subscription]:
    version = draw(st.integers(0, 3))
    return version, Subscription(
        topics=tuple(draw(st.lists(names, max_size=5))),
        user_data=draw(maybe_bytes),
        owned_partitions=draw(topic_partitions) if version >= 1 else (),
        generation_id=draw(st.integers(-1, 2**31 - 1)) if version >= 2 else -1,
        rack_id=draw(st.none() | names) if version >= 3 else None,
    )


@given(subscriptions())
def test_subscription_round_trip(case: tuple[int, Subscription]) -> None:
    version, subscription = case
    data = encode_subscription(subscription, version)
    assert struct.unpack_from(">h", data)[0] == version
    assert decode_subscription(data) == subscription  # decode checks every byte was consumed
    for cut in range(len(data)):
        with pytest.raises(GroupError) as caught:
            decode_subscription(data[:cut])
        assert caught.value.error_code == 23
    with pytest.raises(GroupError):
        decode_subscription(data + b"\x00")


@given(st.integers(0, 3), topic_partitions, maybe_bytes)
def test_assignment_round_trip(version: int, tps: tuple, user_data: bytes | None) -> None:
    assignment = Assignment(tps, user_data)
    data = encode_assignment(assignment, version)
    assert decode_assignment(data) == assignment
    for cut in range(1, len(data)):
        with pytest.raises(GroupError):
            decode_assignment(data[:cut])
    with pytest.raises(GroupError):
        decode_assignment(data + b"\x00")


@given(topic_partitions, st.integers(-1, 2**31 - 1))
def test_sticky_user_data_round_trip(tps: tuple, generation: int) -> None:
    data = StickyUserData(tps, generation)
    assert decode_sticky_user_data(encode_sticky_user_data(data)) == data
    v0 = encode_sticky_user_data(data)[:-4]
    assert decode_sticky_user_data(v0) == StickyUserData(tps, -1)


def test_subscription_layout_matches_kafka() -> None:
    data = encode_subscription(Subscription(("t",), None, (("t", 0), ("t", 1)), 5, "r"), 3)
    assert data == (
        b"\x00\x03"  # version
        b"\x00\x00\x00\x01\x00\x01t"  # topics ["t"]
        b"\xff\xff\xff\xff"  # user_data null
        b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01"  # owned t[0, 1]
        b"\x00\x00\x00\x05"  # generation
        b"\x00\x01r"  # rack
    )


def test_newer_versions_read_as_newest_and_may_carry_more() -> None:
    data = bytearray(encode_subscription(Subscription(("t",)), 3))
    data[0:2] = struct.pack(">h", 9)
    assert decode_subscription(bytes(data) + b"future field").topics == ("t",)
    with pytest.raises(GroupError):
        decode_subscription(b"\xff\xff")


def test_empty_assignment_bytes_mean_no_partitions() -> None:
    assert decode_assignment(b"") == Assignment(())


def test_malformed_lengths_raise() -> None:
    with pytest.raises(GroupError):
        decode_subscription(b"\x00\x00\xff\xff\xff\xfe")  # negative topic count
    with pytest.raises(GroupError):
        decode_subscription(b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe\xff\xff\xff\xff")  # not UTF-8
    with pytest.raises(ValueError, match="version"):
        encode_subscription(Subscription(()), 4)
