"""Each client × each codec: keyed and unkeyed messages with headers come back intact, in order per partition."""

from __future__ import annotations

import pytest

from .clients import CLIENTS, CODECS, Client, assert_intact, messages
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

COUNT = 30
PARTITIONS = 3


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client_type", CLIENTS)
def test_produce_and_read_back(served: ServedBroker, client_type: type[Client], codec: str) -> None:
    client = client_type(served.bootstrap)
    client.skip_unless_codec(codec)
    topic = f"rt-{client.name}-{codec}"
    if client.has_admin:
        client.create_topic(topic, PARTITIONS)
    sent = messages(topic, COUNT, headers=(("codec", codec.encode()), ("client", client.name.encode())))
    client.produce(topic, sent, codec)
    got = client.consume(topic, COUNT)
    assert_intact(sent, got)
    assert len({r.partition for r in got}) > 1, "keys and round robin spread the messages over the partitions"
