"""The transactional producer: `broker.producer(transactional_id=...)`, exactly-once writes (KIP-98, KIP-447).

    async with broker.producer(transactional_id="orders-app") as producer:
        async with producer.transaction():          # commit on success, abort on an exception
            await producer.send("out", b"...")
            await producer.send_offsets_to_transaction({("in", 0): 42}, "orders-app-group")

The producer's first transaction registers the transactional id (InitProducerId), which fences every older instance
of it: their next write, offset commit or commit fails with `ProducerFencedError` (aborting what they had open).
Every batch carries the producer id, epoch and per-partition sequence and the transactional bit; before the first
write to a partition in a transaction the partition is added to it (AddPartitionsToTxn), as Kafka's producers do.
Each commit or abort bumps the epoch (KIP-890 part 2), so sequences start over at 0 and a write left over from the
previous transaction can never land in the next one.

Rules: `send` and `send_offsets_to_transaction` need an open transaction (`TransactionError` otherwise, with
INVALID_TXN_STATE); a failed write inside a transaction makes it abort-only: `commit` then raises and the
transaction is aborted (the context manager aborts it for you). No dead-letter fallback here: a record that cannot be
written fails the transaction, which is what exactly-once demands. CONCURRENT_TRANSACTIONS (the previous transaction
still completing) is retried with backoff.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from kafkalite.client.producer import Producer, _Outcome
from kafkalite.client.records import RecordMetadata
from kafkalite.client.transport import Transport
from kafkalite.errors import ClosedError, ProducerFencedError, TransactionError
from kafkalite.protocol.records import RecordToWrite, build_batch

logger = logging.getLogger("kafkalite.producer")

INVALID_TXN_STATE = 48
CONCURRENT_TRANSACTIONS = 51
_BUSY_RETRIES = 50
_BUSY_BACKOFF_S = 0.02


class TransactionalProducer(Producer):
    """A `Producer` whose sends belong to transactions; see the module docstring."""

    def __init__(
        self,
        transport: Transport,
        transactional_id: str,
        *,
        transaction_timeout: float = 60.0,
        **options: Any,
    ) -> None:
        if not transactional_id or not isinstance(transactional_id, str):
            raise ValueError(f"transactional_id must be a non-empty string, not {transactional_id!r}")
        if options.get("acks", "all") not in ("all", -1):
            raise ValueError("a transactional producer writes with acks='all'")
        options["dead_letter"] = False
        super().__init__(transport, **options)
        self.transactional_id = transactional_id
        self._timeout_ms = int(transaction_timeout * 1000)
        self._producer_id = -1
        self._epoch = -1
        self._in_transaction = False
        self._failure: BaseException | None = None
        self._added: set[tuple[str, int]] = set()
        self._sequences: dict[tuple[str, int], int] = {}
        self._fenced = False

    @property
    def producer_id(self) -> int:
        return self._producer_id

    @property
    def producer_epoch(self) -> int:
        return self._epoch

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    async def init_transactions(self) -> None:
        """Register the transactional id (fencing older instances, aborting what they left open). Called by the
        first `begin_transaction` when not called before."""
        self._check_usable()
        self._producer_id, self._epoch = await self._busy_retry(
            lambda: self._transport.init_transactional_producer(self.transactional_id, self._timeout_ms)
        )
        self._sequences.clear()
        logger.info(
            "%s initialised transactional_id=%s producer_id=%d epoch=%d",
            self.name,
            self.transactional_id,
            self._producer_id,
            self._epoch,
        )

    async def begin_transaction(self) -> None:
        self._check_usable()
        if self._in_transaction:
            raise TransactionError(f"{self.name}: a transaction is already open", INVALID_TXN_STATE)
        if self._producer_id < 0:
            await self.init_transactions()
        self._in_transaction = True
        self._failure = None
        self._added.clear()

    async def commit_transaction(self) -> None:
        """Flush, then commit; if a write failed, abort instead and raise that failure."""
        self._require_transaction()
        await self.flush()
        if self._failure is not None:
            failure = self._failure
            await self.abort_transaction()
            raise TransactionError(
                f"{self.name}: transaction aborted, a write failed: {failure}", INVALID_TXN_STATE
            ) from failure
        await self._end(commit=True)

    async def abort_transaction(self) -> None:
        self._require_transaction()
        await self.flush()
        if self._fenced:
            self._in_transaction = False
            return
        await self._end(commit=False)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[TransactionalProducer]:
        """`async with producer.transaction():` commits when the block ends, aborts when it raises."""
        await self.begin_transaction()
        try:
            yield self
        except BaseException:
            if self._in_transaction:
                try:
                    await self.abort_transaction()
                except Exception:
                    logger.exception("%s could not abort its transaction", self.name)
            raise
        await self.commit_transaction()

    async def send_offsets_to_transaction(
        self, offsets: Mapping[tuple[str, int], int], group: Any, *, member_id: str = "", generation_id: int = -1
    ) -> None:
        """Commit the consumer offsets `{(topic, partition): next offset}` of `group` with this transaction.

        `group` is a group id, or a group consumer (`broker.consumer(..., group_id=...)`), whose member id and
        generation are then checked too, so a consumer that lost its partitions in a rebalance cannot commit for
        them (KIP-447).
        """
        self._require_transaction()
        group_id = group if isinstance(group, str) else getattr(group, "group_id", None)
        if not isinstance(group_id, str) or not group_id:
            raise ValueError(f"group must be a group id or a group consumer, not {group!r}")
        if not isinstance(group, str):
            member_id, generation_id = group.member_id, group.generation_id
        await self.flush()
        entries = [(topic, partition, offset) for (topic, partition), offset in offsets.items()]
        await self._busy_retry(
            lambda: self._transport.add_offsets_to_txn(self.transactional_id, self._producer_id, self._epoch, group_id)
        )
        self._added.add(("", -1))  # the group's offsets partition: the transaction is no longer empty
        await self._guard(
            self._transport.txn_offset_commit(
                self.transactional_id,
                group_id,
                self._producer_id,
                self._epoch,
                entries,
                member_id=member_id,
                generation_id=generation_id,
            )
        )

    async def close(self) -> None:
        if self._closed:
            return
        if self._in_transaction and not self._fenced:
            try:
                await self.abort_transaction()
            except Exception:
                logger.exception("%s could not abort its open transaction on close", self.name)
        await super().close()

    # --- writes -----------------------------------------------------------------------------------------------

    async def _write(self, topic: str, partition: int, records: list[RecordToWrite]) -> tuple[list[_Outcome], bool]:
        now = int(time.time() * 1000)
        try:
            self._require_transaction()
            key = (topic, partition)
            if key not in self._added:
                await self._busy_retry(
                    lambda: self._transport.add_partitions_to_txn(
                        self.transactional_id, self._producer_id, self._epoch, [key]
                    )
                )
                self._added.add(key)
            # No await between taking the sequence and the append: concurrent writes to one partition keep order.
            sequence = self._sequences.get(key, 0)
            self._sequences[key] = sequence + len(records)
            batch = build_batch(
                records,
                now_ms=now,
                producer_id=self._producer_id,
                producer_epoch=self._epoch,
                base_sequence=sequence,
                transactional=True,
            )
            base = await self._guard(
                self._transport.produce_transactional(topic, partition, batch, self.transactional_id)
            )
        except Exception as exc:
            if self._in_transaction and self._failure is None:
                self._failure = exc
            return [exc] * len(records), True
        return [
            RecordMetadata(topic, partition, base + i, now if r.timestamp is None else r.timestamp)
            for i, r in enumerate(records)
        ], False

    # --- internals --------------------------------------------------------------------------------------------

    async def _end(self, *, commit: bool) -> None:
        if not self._added:  # nothing was added: the coordinator never heard of this transaction (as in Kafka)
            self._in_transaction = False
            return
        self._producer_id, self._epoch = await self._busy_retry(
            lambda: self._transport.end_txn(self.transactional_id, self._producer_id, self._epoch, commit)
        )
        self._in_transaction = False
        self._sequences.clear()  # the epoch moved on: sequences start over

    async def _guard(self, call: Any) -> Any:
        try:
            return await call
        except ProducerFencedError:
            self._fenced = True
            raise

    async def _busy_retry(self, call: Any) -> Any:
        """Run `call()`, retrying while the previous transaction is still completing (CONCURRENT_TRANSACTIONS)."""
        for _ in range(_BUSY_RETRIES):
            try:
                return await self._guard(call())
            except TransactionError as exc:
                if exc.error_code != CONCURRENT_TRANSACTIONS:
                    raise
            await asyncio.sleep(_BUSY_BACKOFF_S)
        return await self._guard(call())

    def _require_transaction(self) -> None:
        self._check_usable()
        if not self._in_transaction:
            raise TransactionError(
                f"{self.name}: no transaction is open (use `async with producer.transaction():`)", INVALID_TXN_STATE
            )

    def _check_usable(self) -> None:
        if self._closed:
            raise ClosedError(f"{self.name} is closed")
        if self._fenced:
            raise ProducerFencedError(
                f"{self.name}: transactional_id={self.transactional_id} was taken over by a newer producer"
            )
