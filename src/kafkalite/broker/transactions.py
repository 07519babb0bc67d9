"""The transaction service: the pure coordinator (`kafkalite.transactions`) put to work on this broker.

It owns what the coordinator must not touch: persistence (`transaction_log`, in `__transaction_state`, which is
created on first use, as Kafka creates it), new producer
ids (from the broker's durable allocator), the markers (`Partition.write_marker` on every partition of a completing
transaction, then `OffsetManager.complete_transaction` for `__consumer_offsets`), transactional offset commits, and
the sweep that aborts transactions past their timeout and forgets transactional ids idle for longer than
`transactional.id.expiration.ms` (a tombstone each in the log), every `transaction_abort_interval_ms`.

Order of a completion, so that a crash at any point recovers (rule 6 of `transactions/_state.py`):
  1. the Prepare* state is persisted (synced) before the client is answered or any marker is written;
  2. every marker is appended, then every touched partition synced;
  3. only then the Complete* state is appended, without waiting for its fsync (the next synced write of the log,
     or closing it, makes it durable; it can only become durable after the markers, which already are).
A crash before 3 is durable leaves Prepare* in the log: the next start writes the markers again (a second marker for
a transaction already closed in a partition changes nothing there) and completes. The client is answered after 3, so
its next request never meets the Prepare* state; AddPartitionsToTxn (Empty/Complete* → Ongoing) is synced before it
is answered, or a crash could forget a partition that holds the transaction's data, leaving it open for ever.
An Ongoing transaction found on start is aborted by the sweep once its timeout (counted from its recorded start) has
passed.

Concurrency: one event loop. Every coordinator call mutates at once and returns; the awaits come after. A transaction
being completed sits in a Prepare* state, and the coordinator answers CONCURRENT_TRANSACTIONS to anything else asked
of it meanwhile, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from kafkalite.broker.offsets import OFFSETS_TOPIC
from kafkalite.broker.threads import run_in_thread
from kafkalite.broker.transaction_log import TransactionLog
from kafkalite.errors import KafkaLiteError, ProducerFencedError
from kafkalite.transactions import (
    Completion,
    CoordinatorConfig,
    TopicPartition,
    TransactionCoordinator,
    TxnMetadata,
    TxnResult,
    TxnState,
)
from kafkalite.transactions.errors import CONCURRENT_TRANSACTIONS, NAMES, NONE

if TYPE_CHECKING:
    from kafkalite.broker.broker import Broker

logger = logging.getLogger("kafkalite.transactions")

COORDINATOR_EPOCH = 0  # one broker coordinates every transactional id, and always has
_FENCE_RETRIES = 3  # InitProducerId meeting an ongoing transaction: abort it, then bump (once is enough; bounded)


def _now_ms() -> int:
    return int(time.time() * 1000)


class TransactionService:
    """Runs the transaction coordinator for `broker`; see the module docstring."""

    def __init__(
        self,
        broker: Broker,
        log: TransactionLog | None,
        create_log: Callable[[], Awaitable[TransactionLog]],
        allocate_producer_id: Callable[[], Awaitable[int]],
        *,
        max_timeout_ms: int,
        abort_interval_ms: int,
        fsync: bool,
        id_expiration_ms: int = 604_800_000,
    ) -> None:
        self._broker = broker
        self._log = log  # None until the first transactional id needs `__transaction_state` (`create_log`)
        self._create_log = create_log
        self._creating_log = asyncio.Lock()
        self._allocate = allocate_producer_id
        self._fsync = fsync
        self._abort_interval_s = abort_interval_ms / 1000
        self._id_expiration_ms = id_expiration_ms
        self.coordinator = TransactionCoordinator(CoordinatorConfig(max_timeout_ms=max_timeout_ms))
        self._completing: set[str] = set()
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Replay the log, finish what a crash interrupted, and start the timeout sweep."""
        for txn in self._log.load() if self._log is not None else ():
            self.coordinator.load(txn)
        await self._find_long_open_transactions()
        for completion in self.coordinator.pending_completions():
            logger.info(
                "Completing transaction %s (%s) interrupted by a restart",
                completion.transactional_id,
                "commit" if completion.commit else "abort",
            )
            await self._complete(completion)
        self._sweeper = asyncio.create_task(self._sweep_loop(), name="kafkalite-transaction-timeouts")

    async def _find_long_open_transactions(self) -> None:
        """An Ongoing transaction may have begun before the log tail the partitions replayed on open: find its first
        batch in each of its partitions, so the last stable offset is right from the start."""
        for txn in self.coordinator.all():
            if txn.state is not TxnState.ONGOING:
                continue
            for topic, index in sorted(txn.partitions):
                try:
                    partition = self._broker.partition(topic, index)
                except KafkaLiteError:
                    continue
                first = await run_in_thread(partition.find_open_transaction, txn.producer_id)
                if first is not None:
                    partition.transactions.reopen(txn.producer_id, first)
                    logger.info(
                        "Transaction %s has been open in %s-%d since offset %d",
                        txn.transactional_id,
                        topic,
                        index,
                        first,
                    )

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)

    def max_producer_id(self) -> int:
        return self.coordinator.max_producer_id()

    # --- requests ---------------------------------------------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int = -1, producer_epoch: int = -1
    ) -> TxnResult:
        """InitProducerId with a transactional id: a new id or a bumped epoch; an ongoing transaction is aborted."""
        result = TxnResult(CONCURRENT_TRANSACTIONS)
        for _ in range(_FENCE_RETRIES):
            fresh = await self._allocate() if self.coordinator.needs_producer_id(transactional_id) else None
            result = self.coordinator.init_producer_id(
                transactional_id,
                timeout_ms,
                _now_ms(),
                fresh_producer_id=fresh,
                expected_producer_id=producer_id,
                expected_epoch=producer_epoch,
            )
            if result.completion is not None:
                logger.info("Fencing transactional_id=%s: aborting its ongoing transaction", transactional_id)
            await self._persist_and_complete(result)
            if result.completion is None:
                break
        return result

    async def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[TopicPartition]
    ) -> TxnResult:
        result = self.coordinator.add_partitions(transactional_id, producer_id, epoch, partitions, _now_ms())
        await self._persist(result)
        return result

    def verify_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        return self.coordinator.verify_partitions(transactional_id, producer_id, epoch, partitions)

    async def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> TxnResult:
        """AddOffsetsToTxn: the group's offsets partition joins the transaction (one partition holds every group)."""
        return await self.add_partitions(transactional_id, producer_id, epoch, [(OFFSETS_TOPIC, 0)])

    async def add_implicitly(
        self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition
    ) -> int:
        """Transaction version 2: a Produce v12+ or TxnOffsetCommit v5+ adds its partition to the transaction (the
        AddPartitionsToTxn a version 1 client sends itself); 0 or the Kafka error code. Free when it is already in."""
        if self.coordinator.check_write(transactional_id, producer_id, epoch, partition) == NONE:
            return NONE
        result = await self.add_partitions(transactional_id, producer_id, epoch, [partition])
        return result.error

    async def commit_offsets(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        epoch: int,
        commits: list[tuple[str, int, int, str, int]],
        *,
        implicit_add: bool = False,
    ) -> int:
        """TxnOffsetCommit: write the offsets as part of the transaction; 0 or the Kafka error code. With
        `implicit_add` (v5+, transaction version 2) `__consumer_offsets` joins the transaction here."""
        if implicit_add:
            error = await self.add_implicitly(transactional_id, producer_id, epoch, (OFFSETS_TOPIC, 0))
            if error:
                return error
        error = self.coordinator.check_write(transactional_id, producer_id, epoch, (OFFSETS_TOPIC, 0))
        if error:
            return error
        await self._broker.offsets.commit_transactional(group_id, producer_id, epoch, commits)
        return NONE

    def check_write(self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition) -> int:
        return self.coordinator.check_write(transactional_id, producer_id, epoch, partition)

    async def end_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool, *, bump_epoch: bool = False
    ) -> TxnResult:
        """EndTxn: prepare, write the markers, complete; answered once the outcome is durable everywhere. With
        `bump_epoch` (v5+) an epoch about to overflow takes a fresh producer id, allocated durably first."""
        fresh = None
        if bump_epoch and self.coordinator.end_needs_producer_id(transactional_id):
            fresh = await self._allocate()
        result = self.coordinator.end_transaction(
            transactional_id, producer_id, epoch, commit, _now_ms(), bump_epoch=bump_epoch, fresh_producer_id=fresh
        )
        await self._persist_and_complete(result)
        return result

    def describe(self, transactional_id: str) -> TxnMetadata | None:
        return self.coordinator.get(transactional_id)

    def list(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = (), min_duration_ms: int = -1
    ) -> list[TxnMetadata]:
        return self.coordinator.list_transactions(states, producer_ids, min_duration_ms, _now_ms())

    # --- completion and timeouts ------------------------------------------------------------------------------

    async def _persist(self, result: TxnResult) -> None:
        if result.changed is not None:
            await (await self._state_log()).write(result.changed)

    async def _state_log(self) -> TransactionLog:
        if self._log is None:
            async with self._creating_log:
                if self._log is None:
                    self._log = await self._create_log()
        return self._log

    async def _persist_and_complete(self, result: TxnResult) -> None:
        """Step 1, then (for a prepared transaction) steps 2 and 3. The id is marked as completing before the first
        await, so the sweep's retry of interrupted completions never runs one a second time concurrently."""
        completion = result.completion
        if completion is None:
            await self._persist(result)
            return
        self._completing.add(completion.transactional_id)
        try:
            await self._persist(result)
            await self._complete(completion)
        finally:
            self._completing.discard(completion.transactional_id)

    async def _complete(self, completion: Completion) -> None:
        """Steps 2 and 3 of the module docstring."""
        tid = completion.transactional_id
        nested = tid in self._completing
        self._completing.add(tid)
        try:
            touched = []
            for topic, index in sorted(completion.partitions):
                try:
                    partition = self._broker.partition(topic, index)
                except KafkaLiteError:
                    logger.warning("Transaction %s: partition %s-%d is gone, no marker written", tid, topic, index)
                    continue
                try:
                    await partition.write_marker(
                        completion.producer_id, completion.producer_epoch, completion.commit, COORDINATOR_EPOCH
                    )
                except ProducerFencedError as exc:  # a newer epoch already wrote there: this marker is superseded
                    logger.warning("Transaction %s: no marker written to %s-%d: %s", tid, topic, index, exc)
                    continue
                if topic == OFFSETS_TOPIC:
                    self._broker.offsets.complete_transaction(completion.producer_id, completion.commit)
                touched.append(partition)
            if self._fsync:
                await asyncio.gather(*(partition.log.sync() for partition in touched))
            log = await self._state_log()
            await log.write(self.coordinator.complete(tid, _now_ms()), sync=False)
            await log.compact_if_due(len(self.coordinator), lambda: [txn.snapshot() for txn in self.coordinator.all()])
        finally:
            if not nested:
                self._completing.discard(tid)
        logger.info(
            "Transaction %s of producer %d epoch %d %s on %d partitions",
            tid,
            completion.producer_id,
            completion.producer_epoch,
            "committed" if completion.commit else "aborted",
            len(completion.partitions),
        )

    async def abort_expired(self, now_ms: int | None = None) -> int:
        """Rule 5: abort every transaction past its timeout; also retry completions a failure left behind."""
        now = _now_ms() if now_ms is None else now_ms
        count = 0
        for result in self.coordinator.expire(now):
            assert result.completion is not None
            assert result.changed is not None
            logger.info(
                "Aborting transaction %s: open for more than %d ms; its producer is fenced (epoch now %d)",
                result.changed.transactional_id,
                result.changed.timeout_ms,
                result.changed.producer_epoch,
            )
            await self._persist_and_complete(result)
            count += 1
        for completion in self.coordinator.prepared_completions():
            if completion.transactional_id not in self._completing:
                logger.warning("Retrying the completion of transaction %s", completion.transactional_id)
                await self._complete(completion)
        return count

    async def expire_transactional_ids(self, now_ms: int | None = None) -> builtins.list[str]:
        """Rule 7: forget the transactional ids idle for longer than `transactional.id.expiration.ms`, each with a
        tombstone in `__transaction_state` (synced with the broker's fsync), so a restart forgets them too."""
        now = _now_ms() if now_ms is None else now_ms
        expired = self.coordinator.expire_ids(now, self._id_expiration_ms)
        if expired:
            await (await self._state_log()).write_tombstones(expired)
            for tid in expired:
                logger.info("Transactional id %s expired: idle for more than %d ms", tid, self._id_expiration_ms)
        return expired

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self._abort_interval_s)
            try:
                await self.abort_expired()
                await self.expire_transactional_ids()
            except Exception:  # a failed pass (a full disk) must not end the sweep: the next one retries
                logger.exception("Transaction timeout sweep failed; retrying in %ss", self._abort_interval_s)


def error_name(code: int) -> str:
    return NAMES.get(code, str(code))
