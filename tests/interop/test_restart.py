"""Each client: what was acknowledged before `kafkalite serve` restarted (SIGTERM, same data dir) reads back intact.

Resuming a consumer group from its committed offsets after a restart is covered for confluent-kafka, aiokafka and
kafka-python by tests/server/test_groups_*.py; kcat's balanced consumer (-G) is checked here.
"""

from __future__ import annotations

import pytest

from .clients import CLIENTS, NO_KCAT, Client, Kcat, assert_intact, messages
from .conftest import Serve

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

COUNT = 40


@pytest.mark.parametrize("client_type", CLIENTS)
def test_everything_reads_back_after_restart(serve: Serve, client_type: type[Client]) -> None:
    broker = serve("--num-partitions", "3")
    client = client_type(broker.bootstrap)
    topic = f"restart-{client.name}"
    if client.has_admin:
        client.create_topic(topic, 3)
    sent = messages(topic, COUNT, headers=(("h", b"before restart"),))
    client.produce(topic, sent, "gzip")
    broker.restart()
    assert_intact(sent, client.consume(topic, COUNT))
    more = messages(f"{topic}-after", 10, headers=(("h", b"after restart"),))
    client.produce(topic, more, "gzip")
    assert len(client.consume(topic, COUNT + 10)) == COUNT + 10


@NO_KCAT
def test_kcat_group_resumes_from_committed_offset_after_restart(serve: Serve) -> None:
    broker = serve("--num-partitions", "1")
    kcat = Kcat(broker.bootstrap)
    kcat.produce("kcat-group", messages("g", 10))
    group = ("-G", "kcat-g", "-X", "auto.offset.reset=earliest", "-f", "%s\n")
    assert kcat.run(*group, "-c", "4", "kcat-group").split() == [f"g-{i}" for i in range(4)]
    broker.restart()
    assert kcat.run(*group, "-c", "6", "kcat-group").split() == [f"g-{i}" for i in range(4, 10)]
