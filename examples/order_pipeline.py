"""An order pipeline with a dead-letter queue, on the embedded broker: `python examples/order_pipeline.py`.

Orders arrive on `orders`. A validator (consumer group `validator`) checks each one and forwards it to `payments`,
keyed by customer so one customer's payments stay in order. The validator has a bug: the legacy web shop sends the
amount as a string ("12.50"), which it rejects. Those orders are retried, then dead-lettered to `orders.DLQ` with
the exception, and the validator moves on: one bad order never blocks a partition. After the fix, the dead letters
are replayed to the validator group alone (its retry topic `orders.validator.retry`, which its consumers read beside
`orders`) and go through. A reporting consumer (no group: it reads every partition) then totals
`payments`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from decimal import Decimal

import kafkalite

ORDERS = 20
LEGACY_EVERY = 6  # every 6th order comes from the legacy web shop, with its amount as a string


class InvalidOrder(ValueError):
    """An order the validator refuses."""


def make_order(number: int) -> dict[str, object]:
    cents = 500 + 125 * number
    amount: object = f"{cents / 100:.2f}" if number % LEGACY_EVERY == 0 else cents / 100
    return {"id": number, "customer": f"customer-{number % 4}", "amount": amount}


def validate(order: dict[str, object], *, accept_strings: bool) -> Decimal:
    """The amount of a valid order. The bug: amounts sent as strings are refused until `accept_strings`."""
    amount = order.get("amount")
    if isinstance(amount, str) and not accept_strings:
        raise InvalidOrder(f"order {order.get('id')}: amount {amount!r} is not a number")
    if not isinstance(amount, (int, float, str)) or Decimal(str(amount)) <= 0:
        raise InvalidOrder(f"order {order.get('id')}: bad amount {amount!r}")
    return Decimal(str(amount)).quantize(Decimal("0.01"))


async def main() -> None:
    fixed = False
    forwarded = 0

    async with kafkalite.Broker() as broker:
        await broker.create_topic("orders", partitions=3)
        await broker.create_topic("payments", partitions=3)

        async with broker.producer() as shop:
            await asyncio.gather(
                *(shop.send("orders", json.dumps(make_order(n)).encode(), key=str(n).encode()) for n in range(ORDERS))
            )
        print(f"the shop sent {ORDERS} orders")

        async with broker.producer() as payments, broker.consumer("orders", group_id="validator") as validator:

            async def forward(message: kafkalite.Message) -> None:
                nonlocal forwarded
                order = json.loads(message.value or b"{}")
                amount = validate(order, accept_strings=fixed)
                payment = {"order": order["id"], "customer": order["customer"], "amount": str(amount)}
                await payments.send("payments", json.dumps(payment).encode(), key=str(order["customer"]).encode())
                forwarded += 1

            running = asyncio.create_task(validator.run(forward, max_retries=2, backoff=0.01))
            legacy = len(range(0, ORDERS, LEGACY_EVERY))
            await until(lambda: forwarded == ORDERS - legacy)
            while len(letters := await broker.dead_letters.list("orders")) < legacy:
                await asyncio.sleep(0.02)

            print(f"validated and forwarded {forwarded}; dead-lettered {legacy}:")
            for letter in letters:
                print(
                    f"  orders-{letter.original_partition} offset {letter.original_offset}: {letter.exception_message}"
                )

            fixed = True  # the validator now accepts amounts sent as strings
            replayed = await broker.dead_letters.replay("orders")
            print(f"after the fix, replayed {len(replayed)} dead letters to {replayed[0].topic}")
            await until(lambda: forwarded == ORDERS)
            validator.stop()
            await running

        total = Decimal("0.00")
        count = 0
        async with broker.consumer("payments", group_id=None) as report:
            while count < ORDERS:
                for message in await report.getmany(timeout=5):
                    total += Decimal(json.loads(message.value or b"{}")["amount"])
                    count += 1
        print(f"payments: {count}, total {total}")


async def until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for `condition()` to hold, polling; give up with an error after `timeout` seconds."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


if __name__ == "__main__":
    asyncio.run(main())
