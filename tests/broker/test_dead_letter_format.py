"""The dead-letter record format and the replay rules, shared by the embedded broker and the network client."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.broker.dead_letter_format import (
    REPLAY_GROUP,
    DeadLetter,
    dead_letter_headers,
    decode_dead_letter,
    is_pending,
    progress_after,
    replay_group,
    replay_target,
    retry_topic,
    retry_topic_or_none,
    selected,
)
from kafkalite.errors import InvalidTopicError

header_values = st.one_of(st.none(), st.binary(max_size=20))
own_headers = st.lists(
    st.tuples(st.text(max_size=10).filter(lambda n: not n.startswith("kafka_dlt-")), header_values), max_size=4
)


class Boom(RuntimeError):
    pass


@given(
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(-1, 2**63 - 1),
    timestamp=st.integers(-1, 2**63 - 1),
    group=st.one_of(st.none(), st.text(min_size=1, max_size=20)),
    message=st.text(max_size=50),
    key=header_values,
    value=header_values,
    headers=own_headers,
)
def test_headers_round_trip(
    partition: int,
    offset: int,
    timestamp: int,
    group: str | None,
    message: str,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]],
) -> None:
    written = [*headers, *dead_letter_headers("orders", partition, offset, timestamp, Boom(message), group)]
    letter = decode_dead_letter(3, 42, key, value, written, timestamp=99)
    assert (letter.original_topic, letter.original_partition, letter.original_offset) == ("orders", partition, offset)
    assert letter.original_timestamp == timestamp
    assert letter.consumer_group == group
    assert letter.exception_class == f"{__name__}.Boom"
    assert letter.exception_message == message
    assert (letter.dlq_partition, letter.dlq_offset, letter.timestamp) == (3, 42, 99)
    assert (letter.key, letter.value, letter.headers) == (key, value, tuple(headers))


def test_the_binary_encodings_are_spring_kafkas() -> None:
    headers = dict(dead_letter_headers("t", 5, 7, 1000, ValueError("x"), "g"))
    assert headers["kafka_dlt-original-partition"] == struct.pack(">i", 5)
    assert headers["kafka_dlt-original-offset"] == struct.pack(">q", 7)
    assert headers["kafka_dlt-original-timestamp"] == struct.pack(">q", 1000)
    assert headers["kafka_dlt-original-consumer-group"] == b"g"
    assert "kafka_dlt-original-consumer-group" not in dict(dead_letter_headers("t", 0, 0, 0, ValueError(), None))


def test_missing_or_malformed_headers_decode_as_unknown() -> None:
    letter = decode_dead_letter(0, 0, None, b"v", [("kafka_dlt-original-offset", b"\x01")])
    assert (letter.original_topic, letter.original_partition, letter.original_offset) == ("", -1, -1)
    assert letter.consumer_group is None


def test_retry_topic_names() -> None:
    assert retry_topic("orders", "billing") == "orders.billing.retry"
    assert retry_topic_or_none("orders", None) is None
    assert retry_topic_or_none("orders", "team/billing") is None
    with pytest.raises(InvalidTopicError, match="team/billing"):
        retry_topic("orders", "team/billing")
    with pytest.raises(InvalidTopicError):
        retry_topic("o" * 200, "g" * 50)  # the name would pass Kafka's 249 characters


def test_where_a_replay_goes() -> None:
    grouped = decode_dead_letter(1, 0, None, b"v", dead_letter_headers("orders", 1, 5, 0, ValueError(), "billing"))
    assert (replay_target("orders", grouped, 3).topic, replay_target("orders", grouped, 3).partition) == (
        "orders.billing.retry",
        1,
    )
    produced = decode_dead_letter(2, 0, None, b"v", dead_letter_headers("orders", 2, -1, 0, ValueError(), None))
    assert (replay_target("orders", produced, 3).topic, replay_target("orders", produced, 3).partition) == ("orders", 2)
    # the original partition is gone (a topic re-created with fewer): the DLQ partition's number, if it exists
    shrunk = decode_dead_letter(0, 0, None, b"v", dead_letter_headers("orders", 4, -1, 0, ValueError(), None))
    assert replay_target("orders", shrunk, 3).partition == 0


def test_pending_and_progress() -> None:
    def letter(offset: int, group: str | None) -> DeadLetter:
        return decode_dead_letter(0, offset, None, b"v", dead_letter_headers("t", 0, 0, 0, ValueError(), group))

    progress = {REPLAY_GROUP: 3, replay_group("billing"): 6}
    assert not is_pending(letter(2, "shipping"), progress)  # below the common progress
    assert is_pending(letter(4, "shipping"), progress)
    assert not is_pending(letter(5, "billing"), progress)  # below billing's own
    assert is_pending(letter(6, "billing"), progress)
    assert is_pending(letter(3, None), progress)
    assert selected(letter(0, "billing"), None)
    assert selected(letter(0, "billing"), "billing")
    assert not selected(letter(0, None), "billing")
    assert progress_after(letter(6, "billing"), None) == (REPLAY_GROUP, 7)
    assert progress_after(letter(6, "billing"), "billing") == ("__kafkalite-dlq-replay.billing", 7)
