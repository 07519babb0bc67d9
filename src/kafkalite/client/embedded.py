"""`kafkalite.Broker`: the in-process broker with `producer()` and `consumer()` attached.

The domain `kafkalite.broker.Broker` knows nothing of clients (layers point one way), so the public class lives
here, one layer up, and adds the two factories the embedded API promises::

    async with kafkalite.Broker(data_dir="./app-data") as broker:
        await broker.create_topic("orders", partitions=3)
        async with broker.producer() as producer:
            await producer.send("orders", b"payload", key=b"user-1")
        async with broker.consumer("orders", group_id="billing") as consumer:
            async for message in consumer: ...

Exactly once: `broker.producer(transactional_id=...)` with `async with producer.transaction():` and
`broker.consumer(..., isolation_level="read_committed")` (see `client.transactional`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafkalite.broker import Broker as CoreBroker
from kafkalite.client.consumer import Consumer
from kafkalite.client.producer import Producer
from kafkalite.client.transactional import TransactionalProducer
from kafkalite.client.transport import EmbeddedTransport


class Broker(CoreBroker):
    """An embedded KafkaLite broker (`data_dir=None` keeps everything in memory)."""

    def producer(self, *, transactional_id: str | None = None, **options: Any) -> Producer:
        """A producer writing into this broker; options as `kafkalite.Producer` takes them. With a
        `transactional_id`, a `TransactionalProducer` (`transaction()`, `send_offsets_to_transaction`)."""
        if transactional_id is not None:
            return TransactionalProducer(EmbeddedTransport(self), transactional_id, **options)
        return Producer(EmbeddedTransport(self), **options)

    def consumer(self, topics: str | Sequence[str], group_id: str | None = None, **options: Any) -> Consumer:
        """A consumer reading from this broker; `async with` joins the group, leaving it on exit."""
        return Consumer(EmbeddedTransport(self), topics, group_id=group_id, **options)
