"""`GroupCoordinator.subscribed_topics`: what OffsetDelete asks before it deletes a group's offsets."""

from __future__ import annotations

from kafkalite.groups import JoinResult, LeavingMember
from kafkalite.groups.consumer_protocol import Subscription, encode_subscription

from .harness import GROUP, Harness


def subscription(*topics: str) -> tuple[tuple[str, bytes], ...]:
    return (("range", encode_subscription(Subscription(topics))),)


def test_the_topics_of_every_member_under_the_chosen_protocol() -> None:
    h = Harness()
    assert h.coordinator.subscribed_topics(GROUP) is None  # unknown group
    join = h.join(client_id="a", protocols=subscription("orders", "refunds"))
    assert isinstance(join, JoinResult)
    assert h.coordinator.subscribed_topics(GROUP) == frozenset({"orders", "refunds"})
    h.coordinator.leave(GROUP, [LeavingMember(join.member_id)], now_ms=h.now)
    assert h.state() == "Empty"
    assert h.coordinator.subscribed_topics(GROUP) == frozenset()  # no members: subscribed to nothing


def test_unreadable_metadata_or_another_protocol_type_cannot_be_told() -> None:
    h = Harness()
    h.join(client_id="a", protocols=(("range", b"\x00\x09garbage"),))
    assert h.coordinator.subscribed_topics(GROUP) is None
    other = Harness()
    other.join(client_id="c", protocol_type="connect", protocols=(("default", b"x"),))
    assert other.coordinator.subscribed_topics(GROUP) is None
