"""The KafkaLite story in one program, on the embedded broker: `python examples/seed_story.py`.

Three producers send keyed orders into a topic of three partitions; the key picks the partition (MD5 of the key,
modulo the partition count). Two consumer groups read the same topic independently: `billing` with two consumers,
`fulfillment` with one. Halfway through, one billing consumer leaves and the group rebalances: its partitions move
to the other consumer and no order is lost. One poison order makes billing's handler fail: it is retried, then
dead-lettered to `orders.DLQ`; once the bug is fixed, the dead letter is replayed to billing alone (through its
retry topic `orders.billing.retry`) and billed, while fulfillment, which never failed, does not see it again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable

import kafkalite

ORDERS_PER_PRODUCER = 10
PRODUCERS = 3
POISON = b"POISON"


async def main() -> None:
    kafkalite.configure_logging("INFO")  # the broker tells its side: joins, rebalances, dead letters, replays
    billed: Counter[str] = Counter()  # consumer name -> orders billed
    shipped = 0
    bug_fixed = False

    def biller(consumer: str) -> Callable[[kafkalite.Message], Awaitable[None]]:
        """The billing handler of one consumer: it fails on the poison order until the bug is fixed."""

        async def bill(message: kafkalite.Message) -> None:
            if message.value is not None and message.value.startswith(POISON) and not bug_fixed:
                raise ValueError(f"cannot bill {message.value!r}")
            billed[consumer] += 1

        return bill

    async def ship(message: kafkalite.Message) -> None:
        nonlocal shipped
        shipped += 1

    # A short session timeout lets the example show a rebalance quickly; Kafka's minimum is 6 s, so lower it.
    async with kafkalite.Broker(group_min_session_timeout_ms=100) as broker:
        await broker.create_topic("orders", partitions=3)
        options = {"session_timeout": 1.0, "heartbeat_interval": 0.1, "poll_interval": 0.05}
        billing = [broker.consumer("orders", group_id="billing", name=f"billing-{n}", **options) for n in (1, 2)]
        fulfillment = broker.consumer("orders", group_id="fulfillment", name="fulfillment-1", **options)
        tasks = []
        for consumer in billing:
            await consumer.start()
            tasks.append(asyncio.create_task(consumer.run(biller(consumer.name), max_retries=2, backoff=0.01)))
        await fulfillment.start()
        tasks.append(asyncio.create_task(fulfillment.run(ship)))

        async def produce(number: int, orders: range) -> None:
            async with broker.producer(name=f"producer-{number}") as producer:
                for index in orders:
                    value = f"order {index} from producer {number}".encode()
                    if number == 2 and index == ORDERS_PER_PRODUCER - 1:
                        value = POISON + b" " + value
                    meta = await producer.send("orders", value, key=f"customer-{index % 5}".encode())
                    print(f"producer-{number} sent order {index} to partition {meta.partition} offset {meta.offset}")

        half = ORDERS_PER_PRODUCER // 2
        await asyncio.gather(*(produce(n, range(half)) for n in range(1, PRODUCERS + 1)))
        await until(lambda: sum(billed.values()) >= half * PRODUCERS)
        print(f"billing-2 leaves after billing {billed['billing-2']} orders: the group rebalances")
        billing[1].stop()
        await tasks[1]
        await billing[1].close()
        await asyncio.gather(*(produce(n, range(half, ORDERS_PER_PRODUCER)) for n in range(1, PRODUCERS + 1)))

        total = ORDERS_PER_PRODUCER * PRODUCERS
        await until(lambda: sum(billed.values()) == total - 1)
        await until(lambda: shipped == total)

        async def one_letter() -> bool:
            return len(await broker.dead_letters.list("orders")) == 1

        await until(one_letter)
        for letter in await broker.dead_letters.list("orders"):
            print(
                f"dead letter: partition {letter.original_partition} offset {letter.original_offset}:"
                f" {letter.exception_class}: {letter.exception_message}"
            )
        bug_fixed = True
        replayed = len(await broker.dead_letters.replay("orders"))
        await until(lambda: sum(billed.values()) == total)
        await asyncio.sleep(0.2)  # time enough for a copy to reach fulfillment, were one sent

        for consumer in (billing[0], fulfillment):
            consumer.stop()
        await asyncio.gather(tasks[0], tasks[2])
        await billing[0].close()
        await fulfillment.close()

    print(f"produced {total} orders")
    print(f"billing billed {sum(billed.values())} ({dict(billed)}), after replaying {replayed} dead letter")
    print(f"fulfillment shipped {shipped} (the replay went to billing alone)")


async def until(condition: Callable[[], bool | Awaitable[bool]], timeout: float = 30.0) -> None:
    """Wait for `condition()` (a function or a coroutine function) to hold, polling; give up after `timeout` s."""
    async with asyncio.timeout(timeout):
        while not await _holds(condition):
            await asyncio.sleep(0.02)


async def _holds(condition: Callable[[], bool | Awaitable[bool]]) -> bool:
    outcome = condition()
    return await outcome if isinstance(outcome, Awaitable) else outcome


if __name__ == "__main__":
    asyncio.run(main())
