"""Every client reads answers the served broker sends from its segment files with sendfile (`kafkalite serve`, on
uvloop, file storage): values of 3 to 60 KiB, so fetch answers are large ranges; every message comes back intact."""

from __future__ import annotations

import pytest

from .clients import CLIENTS, Client, Outgoing, assert_intact
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

COUNT = 60
PARTITIONS = 3


@pytest.mark.parametrize("client_type", CLIENTS)
def test_large_answers_from_the_file_engine_arrive_intact(served: ServedBroker, client_type: type[Client]) -> None:
    client = client_type(served.bootstrap)
    topic = f"zc-{client.name}"
    if client.has_admin:
        client.create_topic(topic, PARTITIONS)
    sent = [
        Outgoing(bytes([65 + i % 26]) * (3_000 * (1 + i % 20)) + b"-%d" % i, b"key-%d" % i if i % 2 else None)
        for i in range(COUNT)
    ]
    client.produce(topic, sent)
    assert_intact(sent, client.consume(topic, COUNT))
