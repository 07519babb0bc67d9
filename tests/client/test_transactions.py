"""The embedded transactional API on both engines: commit, abort, fencing, timeout, offsets in a transaction, the
read_committed consumer, and an exactly-once consume-transform-produce loop that is restarted midway."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import kafkalite
from broker.harness import TIMEOUT_S, BrokerFactory, consumer, wait_for
from kafkalite import errors
from kafkalite.client import TransactionalProducer


async def read_all(broker: kafkalite.Broker, topic: str, isolation_level: str) -> list[bytes | None]:
    """Every message a fresh group-less consumer sees, in partition/offset order, once it has caught up."""
    async with consumer(broker, topic, None, isolation_level=isolation_level) as reader:
        got: list[tuple[int, int, bytes | None]] = []
        for _ in range(20):
            batch = await reader.getmany(timeout=0.05)
            got += [(m.partition, m.offset, m.value) for m in batch]
            if not batch and all(
                reader.position(t, p) >= broker.list_offset(t, p, -1, read_committed=True)[0]
                for t, p in reader.assignment()
            ):
                break
        return [value for _, _, value in sorted(got)]


async def failing_transaction(producer: kafkalite.Producer, *values: bytes, offsets: int | None = None) -> None:
    """A transaction whose body sends `values` (and commits offsets), then raises: the context manager aborts it."""
    assert isinstance(producer, TransactionalProducer)
    async with producer.transaction():
        for value in values:
            await producer.send("t", value)
        if offsets is not None:
            await producer.send_offsets_to_transaction({("in", 0): offsets}, "g")
        raise RuntimeError("boom")


async def test_commit_visible_to_read_committed_only_after_commit(broker: kafkalite.Broker) -> None:
    await broker.create_topic("t", partitions=2)
    async with broker.producer(transactional_id="app") as producer:
        assert isinstance(producer, TransactionalProducer)
        await producer.begin_transaction()
        await producer.send("t", b"one", partition=0)
        await producer.send("t", b"two", partition=1)
        assert await read_all(broker, "t", "read_committed") == []
        assert sorted(await read_all(broker, "t", "read_uncommitted")) == [b"one", b"two"]
        await producer.commit_transaction()
    assert sorted(await read_all(broker, "t", "read_committed")) == [b"one", b"two"]


async def test_abort_on_exception_is_never_seen_by_read_committed(broker: kafkalite.Broker) -> None:
    await broker.create_topic("t")
    async with broker.producer(transactional_id="app") as producer:
        async with producer.transaction():
            await producer.send("t", b"kept")
        with pytest.raises(RuntimeError, match="boom"):
            await failing_transaction(producer, b"dropped-1", b"dropped-2")
        async with producer.transaction():
            await producer.send("t", b"after")
    assert await read_all(broker, "t", "read_committed") == [b"kept", b"after"]
    # read_uncommitted sees the aborted records but never a marker.
    assert await read_all(broker, "t", "read_uncommitted") == [b"kept", b"dropped-1", b"dropped-2", b"after"]


async def test_consumer_position_moves_past_markers(broker: kafkalite.Broker) -> None:
    await broker.create_topic("t")
    async with broker.producer(transactional_id="app") as producer:
        async with producer.transaction():
            await producer.send("t", b"x")
        with pytest.raises(RuntimeError):
            await failing_transaction(producer, b"y")
    end = broker.partition("t", 0).high_watermark
    assert end == 4  # x, commit marker, y, abort marker
    async with consumer(broker, "t", "g", isolation_level="read_committed") as reader:
        assert [m.value for m in await reader.getmany(timeout=1)] == [b"x"]
        await reader.getmany(timeout=0.1)
        await reader.getmany(timeout=0.1)
        assert reader.position("t", 0) == end
        await reader.commit()
    committed = broker.offsets.fetch("g", "t", 0)
    assert committed is not None
    assert committed.offset == end


async def test_zombie_is_fenced(broker: kafkalite.Broker) -> None:
    await broker.create_topic("t")
    first = broker.producer(transactional_id="app")
    await first.begin_transaction()
    await first.send("t", b"zombie")
    second = broker.producer(transactional_id="app")
    async with second.transaction():  # fences `first` and aborts its open transaction
        await second.send("t", b"live")
    with pytest.raises(errors.ProducerFencedError):
        await first.commit_transaction()
    with pytest.raises(errors.ProducerFencedError):
        await first.send("t", b"again")
    await first.close()
    await second.close()
    assert await read_all(broker, "t", "read_committed") == [b"live"]


async def test_timed_out_transaction_is_aborted_and_the_producer_learns_it(make_broker: BrokerFactory) -> None:
    async with make_broker(transaction_abort_interval_ms=20) as broker:
        await broker.create_topic("t")
        producer = broker.producer(transactional_id="slow", transaction_timeout=0.1)
        await producer.begin_transaction()
        await producer.send("t", b"too-late")
        await wait_for(lambda: broker.partition("t", 0).last_stable_offset == 2, what="the broker's abort")
        with pytest.raises(errors.ProducerFencedError):
            await producer.commit_transaction()
        await producer.close()
        assert await read_all(broker, "t", "read_committed") == []
        again = broker.producer(transactional_id="slow")  # the id itself is usable again
        assert isinstance(again, TransactionalProducer)
        async with again, again.transaction():
            await again.send("t", b"fine")
        assert await read_all(broker, "t", "read_committed") == [b"fine"]


async def test_offsets_commit_with_the_transaction_and_vanish_with_an_abort(broker: kafkalite.Broker) -> None:
    await broker.create_topic("t")
    async with broker.producer(transactional_id="app") as producer:
        async with producer.transaction():
            await producer.send("t", b"x")
            await producer.send_offsets_to_transaction({("in", 0): 5}, "g")
            assert broker.offsets.fetch("g", "in", 0) is None
        committed = broker.offsets.fetch("g", "in", 0)
        assert committed is not None
        assert committed.offset == 5
        with pytest.raises(RuntimeError):
            await failing_transaction(producer, offsets=9)
    committed = broker.offsets.fetch("g", "in", 0)
    assert committed is not None
    assert committed.offset == 5


async def test_misuse_gets_clear_errors(broker: kafkalite.Broker) -> None:
    await broker.create_topic("t")
    producer = broker.producer(transactional_id="app")
    with pytest.raises(errors.TransactionError, match="no transaction is open") as no_txn:
        await producer.send("t", b"x")
    assert no_txn.value.error_code == 48
    await producer.begin_transaction()
    with pytest.raises(errors.TransactionError, match="already open"):
        await producer.begin_transaction()
    await producer.abort_transaction()
    await producer.close()
    with pytest.raises(ValueError, match="transactional_id"):
        broker.producer(transactional_id="")
    with pytest.raises(ValueError, match="isolation_level"):
        broker.consumer("t", isolation_level="serializable")  # type: ignore[arg-type]
    with pytest.raises(errors.TransactionError):
        await broker.init_producer_id("t2", transaction_timeout_ms=10**9)  # above transaction.max.timeout.ms


async def eos_loop(broker: kafkalite.Broker, stop_after: int | None) -> int:
    """Consume `in`, write each value upper-cased to `out`, commit the offsets with the output, once per message.
    Stops (as if killed: nothing committed for the message in hand) after `stop_after` transactions."""
    done = 0
    async with (
        broker.producer(transactional_id="eos") as producer,
        consumer(broker, "in", "eos-group", isolation_level="read_committed", enable_auto_commit=False) as source,
    ):
        assert isinstance(producer, TransactionalProducer)
        idle = 0
        while idle < 10:
            batch = await source.getmany(timeout=0.05, max_records=3)
            if not batch:
                idle += 1
                continue
            idle = 0
            if stop_after is not None and done == stop_after:
                await producer.begin_transaction()
                await producer.send("out", batch[0].value.upper() if batch[0].value else None)
                return done  # "killed": the open transaction is aborted when the next instance fences this one
            async with producer.transaction():
                for message in batch:
                    await producer.send("out", message.value.upper() if message.value else None)
                last = batch[-1]
                await producer.send_offsets_to_transaction({(last.topic, last.partition): last.offset + 1}, source)
            done += 1
    return done


async def test_exactly_once_consume_transform_produce_across_restarts(make_broker: BrokerFactory) -> None:
    async with make_broker() as broker:
        await broker.create_topic("in")
        await broker.create_topic("out")
        async with broker.producer() as plain:
            for i in range(30):
                await plain.send("in", b"m%02d" % i)
        for stop_after in (2, 3, None):
            await asyncio.wait_for(eos_loop(broker, stop_after), TIMEOUT_S)
        out = await read_all(broker, "out", "read_committed")
        assert out == [b"M%02d" % i for i in range(30)]


async def test_restart_keeps_committed_and_drops_open_transactions(tmp_path: Path) -> None:
    factory = BrokerFactory("file", tmp_path)
    async with factory(transaction_abort_interval_ms=20) as broker:
        await broker.create_topic("t")
        async with broker.producer(transactional_id="app") as producer, producer.transaction():
            await producer.send("t", b"committed")
        open_one = broker.producer(transactional_id="open", transaction_timeout=0.2)
        await open_one.begin_transaction()
        await open_one.send("t", b"open")
    async with factory(transaction_abort_interval_ms=20) as broker:
        await wait_for(lambda: broker.partition("t", 0).last_stable_offset == broker.partition("t", 0).high_watermark)
        assert await read_all(broker, "t", "read_committed") == [b"committed"]


async def test_the_readme_example(broker: kafkalite.Broker) -> None:
    await broker.create_topic("orders")
    await broker.create_topic("invoices")
    async with broker.producer() as plain:
        for i in range(3):
            await plain.send("orders", b"order-%d" % i)
    seen = 0
    async with (
        broker.producer(transactional_id="billing-app") as producer,
        broker.consumer(
            "orders", group_id="billing", isolation_level="read_committed", enable_auto_commit=False
        ) as consumer,
    ):
        assert isinstance(producer, TransactionalProducer)
        async for message in consumer:
            async with producer.transaction():
                await producer.send("invoices", message.value)
                await producer.send_offsets_to_transaction(
                    {(message.topic, message.partition): message.offset + 1}, consumer
                )
            seen += 1
            if seen == 3:
                break
    assert await read_all(broker, "invoices", "read_committed") == [b"order-0", b"order-1", b"order-2"]
    committed = broker.offsets.fetch("billing", "orders", 0)
    assert committed is not None
    assert committed.offset == 3
