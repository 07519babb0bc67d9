"""The embedded API and the wire see the same data dir: produce embedded, serve, consume with each client; and
produce with each client, stop the server, open the dir embedded and consume."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import kafkalite

from .clients import CLIENTS, WAIT_S, Client, Outgoing, Received, assert_intact, messages
from .conftest import Serve

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

COUNT = 20
HEADERS = (("origin", b"embedded-or-wire"),)


async def produce_embedded(data_dir: Path, topic: str, sent: list[Outgoing]) -> None:
    async with kafkalite.Broker(data_dir=data_dir) as broker:
        await broker.create_topic(topic, partitions=3)
        async with broker.producer() as producer:
            futures = [producer.send_soon(topic, m.value, m.key, headers=m.headers) for m in sent]
            await asyncio.wait_for(asyncio.gather(*futures), WAIT_S)


async def consume_embedded(data_dir: Path, topic: str, count: int) -> list[Received]:
    async with kafkalite.Broker(data_dir=data_dir) as broker, broker.consumer(topic) as consumer:
        got: list[kafkalite.Message] = []
        async with asyncio.timeout(WAIT_S):
            while len(got) < count:
                got += await consumer.getmany(timeout=0.2)
    return [Received(m.partition, m.offset, m.key, m.value or b"", m.headers) for m in got]


@pytest.mark.parametrize("client_type", CLIENTS)
def test_embedded_to_wire(serve: Serve, tmp_path: Path, client_type: type[Client]) -> None:
    sent = messages("embedded", COUNT, HEADERS)
    asyncio.run(produce_embedded(tmp_path / "data", "from-embedded", sent))
    broker = serve("--fsync", "never")
    assert_intact(sent, client_type(broker.bootstrap).consume("from-embedded", COUNT))


@pytest.mark.parametrize("client_type", CLIENTS)
def test_wire_to_embedded(serve: Serve, tmp_path: Path, client_type: type[Client]) -> None:
    broker = serve("--fsync", "never", "--num-partitions", "3")
    client = client_type(broker.bootstrap)
    sent = messages("wire", COUNT, HEADERS)
    client.produce("from-wire", sent, "gzip")
    assert broker.stop() == 0, broker.log()
    assert_intact(sent, asyncio.run(consume_embedded(tmp_path / "data", "from-wire", COUNT)))
