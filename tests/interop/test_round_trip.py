"""Each client × each codec: keyed and unkeyed messages with headers come back intact, in order per partition."""

from __future__ import annotations

import pytest

from .clients import CLIENTS, CODECS, Client, Received, messages
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

COUNT = 30
PARTITIONS = 3


def assert_round_trip(sent_values: list[bytes], by_value: dict[bytes, tuple[bytes | None, tuple]], got: list[Received]):
    """Every message exactly once with its key and headers; per partition, offsets 0.. in the order they were sent."""
    assert sorted(r.value for r in got) == sorted(sent_values)
    for r in got:
        assert (r.key, r.headers) == by_value[r.value], r
    order = {value: i for i, value in enumerate(sent_values)}
    for p in {r.partition for r in got}:
        mine = sorted((r for r in got if r.partition == p), key=lambda r: r.offset)
        assert [r.offset for r in mine] == list(range(len(mine)))
        assert [order[r.value] for r in mine] == sorted(order[r.value] for r in mine)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client_type", CLIENTS)
def test_produce_and_read_back(served: ServedBroker, client_type: type[Client], codec: str) -> None:
    client = client_type(served.bootstrap)
    client.skip_unless_codec(codec)
    topic = f"rt-{client.name}-{codec}"
    if client.has_admin:
        client.create_topic(topic, PARTITIONS)
    outgoing = messages(topic, COUNT, headers=(("codec", codec.encode()), ("client", client.name.encode())))
    client.produce(topic, outgoing, codec)
    got = client.consume(topic, COUNT)
    assert_round_trip([m.value for m in outgoing], {m.value: (m.key, m.headers) for m in outgoing}, got)
    assert len({r.partition for r in got}) > 1, "keys and round robin spread the messages over the partitions"
