"""Admin calls through each client that has an admin API: create, grow, describe and alter configs, list and
describe groups, delete. (kcat has none, so it has no cell here.)"""

from __future__ import annotations

import pytest

from .clients import ADMIN_CLIENTS, Client
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.mark.parametrize("client_type", ADMIN_CLIENTS)
def test_admin_calls(served: ServedBroker, client_type: type[Client]) -> None:
    client = client_type(served.bootstrap)
    topic = f"admin-{client.name}"
    client.create_topic(topic, 2, {"retention.ms": "60000"})
    assert client.topics()[topic] == 2
    assert client.topic_config(topic)["retention.ms"] == "60000"

    client.alter_topic_config(topic, "segment.ms", "120000")
    config = client.topic_config(topic)
    assert (config["segment.ms"], config["retention.ms"]) == ("120000", "60000")

    client.create_partitions(topic, 4)
    assert client.topics()[topic] == 4

    group = f"admin-group-{client.name}"
    client.commit(group, topic, 3, 0)
    assert client.groups()[group] == "empty"
    assert client.group_state(group) == "empty"

    client.delete_topic(topic)
    assert topic not in client.topics()
