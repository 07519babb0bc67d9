"""The seed's story, end to end, on the real broker: `python main.py` or `kafkalite demo`.

Topic `orders` with 3 partitions; 3 async producers with keyed messages (MD5 routing); group `billing` with two
consumers and group `fulfillment` with one, reading the same topic independently. Halfway through, one billing
consumer leaves and the group rebalances. One poison message makes billing's handler fail: it is retried, then
dead-lettered to `orders.DLQ`; the "bug" is then fixed and the dead letter replayed, to billing alone (through its
retry topic `orders.billing.retry`): fulfillment, whose handler never failed, does not see it again. The demo ends
by itself once every group has handled every message exactly once, and returns a summary.

The story is one application: with `bootstrap` set it runs unchanged against that Kafka cluster through
`kafkalite.connect()` (`kafkalite demo -b HOST:PORT`) instead of an embedded broker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from kafkalite.client import Broker, Message
from kafkalite.client.network import connect
from kafkalite.errors import TopicExistsError

TOPIC = "orders"
GROUPS = {"billing": 2, "fulfillment": 1}
POISON = b"POISON"

producer_log = logging.getLogger("kafkalite.producer")
consumer_log = logging.getLogger("kafkalite.consumer")
demo_log = logging.getLogger("kafkalite.demo")


@dataclass(frozen=True, slots=True)
class DemoSettings:
    messages_per_producer: int = 12
    producers: int = 3
    partitions: int = 3
    data_dir: Path | None = None
    send_interval: float = 0.01
    timeout: float = 30.0
    bootstrap: str | None = None  # a Kafka cluster to run against; None: an embedded broker


@dataclass
class DemoSummary:
    produced: int = 0
    consumed: Counter[str] = field(default_factory=Counter)
    dead_lettered: Counter[str] = field(default_factory=Counter)
    replayed: Counter[str] = field(default_factory=Counter)
    rebalanced: bool = False
    seconds: float = 0.0

    def as_table(self) -> Table:
        table = Table(title=f"KafkaLite demo: {self.produced} messages produced to '{TOPIC}' in {self.seconds:.1f}s")
        for column in ("group", "produced", "consumed", "dead-lettered", "replayed"):
            table.add_column(column, justify="right" if column != "group" else "left")
        for group in GROUPS:
            counts = (self.produced, self.consumed[group], self.dead_lettered[group], self.replayed[group])
            table.add_row(group, *map(str, counts))
        return table


async def run_demo(settings: DemoSettings = DemoSettings()) -> DemoSummary:
    began = time.perf_counter()
    summary = DemoSummary()
    poison_bug = {"present": True}
    if settings.bootstrap is None:
        broker: Any = Broker(data_dir=settings.data_dir, group_min_session_timeout_ms=100)
        session_timeout = 1.0
    else:
        broker = connect(settings.bootstrap)
        session_timeout = 6.0  # Kafka's group.min.session.timeout.ms; leaving members rebalance at once anyway
    async with broker:
        try:
            await broker.create_topic(TOPIC, partitions=settings.partitions)
        except TopicExistsError:
            pass
        consumers: list[tuple[str, Any, asyncio.Task[None]]] = []
        for group, count in GROUPS.items():
            for number in range(1, count + 1):
                name = f"{group}-{number}"
                consumer = broker.consumer(
                    TOPIC,
                    group_id=group,
                    name=name,
                    poll_interval=0.05,
                    session_timeout=session_timeout,
                    heartbeat_interval=0.1,
                )
                await consumer.start()
                handler = _handler(name, group, summary, poison_bug)
                task = asyncio.create_task(consumer.run(handler, max_retries=2, backoff=0.02))
                consumers.append((group, consumer, task))

        total = settings.messages_per_producer * settings.producers
        halfway = asyncio.Event()
        producers = [
            asyncio.create_task(_produce(broker, number, settings, summary, halfway, total))
            for number in range(1, settings.producers + 1)
        ]
        await halfway.wait()
        leaving_group, leaving, leaving_task = consumers.pop(1)
        demo_log.info("Consumer %s is leaving group %s halfway: watch the rebalance", leaving.name, leaving_group)
        leaving.stop()
        await leaving_task
        await leaving.close()
        summary.rebalanced = True
        await asyncio.gather(*producers)

        async def settled() -> bool:
            """Every message handled by every group: consumed, or dead-lettered and not replayed."""
            letters = await broker.dead_letters.list(TOPIC)
            summary.dead_lettered = Counter(d.consumer_group or "" for d in letters)
            pending = summary.dead_lettered - summary.replayed
            return all(summary.consumed[g] + pending[g] >= total for g in GROUPS)

        await _wait_until(settled, settings.timeout)
        poison_bug["present"] = False
        demo_log.info("The poison-message bug is fixed: replaying the dead letters of %s to their groups", TOPIC)
        replays = await broker.dead_letters.replay(TOPIC)
        summary.replayed = Counter(r.letter.consumer_group or "" for r in replays)
        await _wait_until(settled, settings.timeout)

        for _, consumer, task in consumers:
            consumer.stop()
            await task
            await consumer.close()
    summary.seconds = time.perf_counter() - began
    return summary


async def _wait_until(condition: Callable[[], Awaitable[bool]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            demo_log.warning("The demo gave up waiting after %.0fs", timeout)
            return
        await asyncio.sleep(0.02)


async def _produce(
    broker: Any, number: int, settings: DemoSettings, summary: DemoSummary, halfway: asyncio.Event, total: int
) -> None:
    async with broker.producer(name=str(number)) as producer:
        for index in range(settings.messages_per_producer):
            producer_log.info("Producer %d generating message %d", number, index)
            value = f"producer {number} generate the message id-{index}".encode()
            if number == 2 and index == settings.messages_per_producer // 2:
                value = POISON + b" " + value
            meta = await producer.send(TOPIC, value, key=f"customer-{index % 5}".encode())
            producer_log.info(
                "Producer %d appended message %d to partition %d offset=%d", number, index, meta.partition, meta.offset
            )
            summary.produced += 1
            if summary.produced >= total // 2:
                halfway.set()
            await asyncio.sleep(settings.send_interval)


def _handler(
    name: str, group: str, summary: DemoSummary, poison_bug: dict[str, bool]
) -> Callable[[Message], Awaitable[None]]:
    async def handle(message: Message) -> None:
        text = (message.value or b"").decode(errors="replace")
        if group == "billing" and message.value and message.value.startswith(POISON) and poison_bug["present"]:
            raise ValueError(f"cannot bill {text!r}")
        consumer_log.info(
            "Consumer %s received: %s (partition %d offset=%d)", name, text, message.partition, message.offset
        )
        summary.consumed[group] += 1

    return handle
