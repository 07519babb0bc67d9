"""A FastStream service against `kafkalite serve`, run the way a team runs one: instances of a billing service in one
consumer group (`billing`) share a 4-partition `orders` topic, each answering an order with a bill published to
`bills`, JSON on the wire, offsets committed after each handled message (`AckPolicy.ACK`). A second instance joining
takes half the partitions, an instance stopping hands its partitions to the one left, and an instance started after
every other stopped resumes at the committed offsets: no order is lost, and none is billed again after the restart.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import confluent_kafka.admin
import pytest
from faststream import AckPolicy
from faststream.kafka import KafkaBroker, Topic

from .clients import WAIT_S
from .conftest import Serve

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

PARTITIONS = 4
# FastStream creates the topics its subscribers read, with one partition unless a Topic says otherwise.
ORDERS = Topic("orders", num_partitions=PARTITIONS)


def billing_service(bootstrap: str) -> KafkaBroker:
    service = KafkaBroker(bootstrap, logger=None)
    bills = service.publisher("bills")

    @service.subscriber(ORDERS, group_id="billing", auto_offset_reset="earliest", ack_policy=AckPolicy.ACK)
    async def bill(order: dict[str, Any]) -> None:
        await bills.publish({"id": order["id"], "due": round(order["total"] * 1.2, 2)}, key=str(order["id"]).encode())

    return service


def audit(bootstrap: str, seen: Counter[int], wrong: list[dict[str, Any]]) -> KafkaBroker:
    """Counts the bills per order id, and keeps any whose amount is not the order's."""
    auditor = KafkaBroker(bootstrap, logger=None)

    @auditor.subscriber("bills", group_id="audit", auto_offset_reset="earliest")
    async def count(bill: dict[str, Any]) -> None:
        if bill["due"] != round(bill["id"] * 1.2, 2):
            wrong.append(bill)
        seen[bill["id"]] += 1

    return auditor


async def place(client: KafkaBroker, first: int, count: int) -> None:
    for n in range(first, first + count):
        await client.publish({"id": n, "total": float(n)}, topic="orders", key=b"customer-%d" % (n % 13))


async def billed(seen: Counter[int], total: int) -> None:
    async def every() -> None:
        while set(seen) != set(range(total)):
            await asyncio.sleep(0.05)

    await asyncio.wait_for(every(), WAIT_S)


def members(bootstrap: str) -> list[int]:
    """How many partitions of `orders` each member of `billing` holds."""
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    group = admin.describe_consumer_groups(["billing"])["billing"].result(WAIT_S)
    return sorted(len(m.assignment.topic_partitions) for m in group.members)


async def balanced(bootstrap: str, wanted: list[int]) -> None:
    async def until_balanced() -> None:
        while await asyncio.to_thread(members, bootstrap) != wanted:
            await asyncio.sleep(0.2)

    await asyncio.wait_for(until_balanced(), WAIT_S)


async def test_a_faststream_service_scales_out_hands_over_and_resumes(serve: Serve) -> None:
    bootstrap = serve("--fsync", "never").bootstrap
    seen: Counter[int] = Counter()
    wrong: list[dict[str, Any]] = []
    async with audit(bootstrap, seen, wrong) as auditor, billing_service(bootstrap) as first:
        await auditor.start()
        await first.start()
        await place(first, 0, 100)
        await billed(seen, 100)
        async with billing_service(bootstrap) as second:
            await second.start()
            await balanced(bootstrap, [2, 2])
            await place(first, 100, 100)
            await billed(seen, 200)
            await first.stop()  # its partitions go to the second instance
            await balanced(bootstrap, [4])
            await place(second, 200, 100)
            await billed(seen, 300)
        before_restart = Counter(seen)
        async with billing_service(bootstrap) as restarted:  # every instance stopped: it resumes at the commits
            await restarted.start()
            await place(restarted, 300, 20)
            await billed(seen, 320)
        assert {n: seen[n] for n in range(300)} == dict(before_restart), "an order billed again after the restart"
    assert set(seen) == set(range(320))
    assert wrong == []
