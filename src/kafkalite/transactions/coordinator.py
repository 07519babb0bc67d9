"""The transaction coordinator: every transactional id's producer id, epoch, state and partitions; pure and in memory.

The rules are written once, in `_state.py`; this module applies them. Nothing here awaits, reads a clock or touches
storage: time is passed in (`now_ms`), new producer ids are passed in by the caller (which allocates them durably),
and every method that changes a transaction returns what the caller must do next:

* persist the changed `TxnMetadata` (`changed`), before it answers the client;
* for a `Completion`: write a commit or abort marker to each of its partitions (with its producer id and epoch),
  persist, then call `complete()`, which moves PrepareCommit/PrepareAbort on to CompleteCommit/CompleteAbort.

Concurrency: a transaction in a Prepare* state refuses every request with CONCURRENT_TRANSACTIONS until `complete()`,
so the caller may await between preparing and completing without any lock: the state itself is the lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from kafkalite.transactions._state import PREPARING, TxnEvent, TxnState, transition
from kafkalite.transactions.errors import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    NONE,
    PRODUCER_FENCED,
)

MAX_EPOCH = 32766  # epochs are int16 and 32767 is reserved: past this a new producer id is handed out
TopicPartition = tuple[str, int]


@dataclass(slots=True)
class TxnMetadata:
    """One transactional id's state: what `__transaction_state` stores and DescribeTransactions answers."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1  # when the ongoing transaction began; -1 when none is ongoing
    last_update_ms: int = -1
    last_producer_epoch: int = -1  # the epoch before a KIP-890 bump at EndTxn, so a retried EndTxn is recognised
    previous_producer_id: int = -1  # the id before an epoch overflow at EndTxn v5 (so its retry is recognised)
    next_producer_id: int = -1  # the id an overflowing EndTxn v5 moves on to once its markers are written
    client_transaction_version: int = 0  # 2 once the client ended a transaction with EndTxn v5+ (KIP-890 part 2)

    def snapshot(self) -> TxnMetadata:
        return replace(self, partitions=set(self.partitions))


@dataclass(frozen=True, slots=True)
class Completion:
    """Markers to write: `commit` or abort for `producer_id`/`producer_epoch` to every partition in `partitions`."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class TxnResult:
    """The answer to one request: an error code, the producer id and epoch to report, and the follow-up work."""

    error: int
    producer_id: int = -1
    producer_epoch: int = -1
    changed: TxnMetadata | None = None
    completion: Completion | None = None


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms


class TransactionCoordinator:
    """Every transactional id this broker coordinates; see the module docstring."""

    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self.config = config or CoordinatorConfig()
        self._txns: dict[str, TxnMetadata] = {}

    # --- reading ---------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._txns)

    def get(self, transactional_id: str) -> TxnMetadata | None:
        return self._txns.get(transactional_id)

    def all(self) -> list[TxnMetadata]:
        return list(self._txns.values())

    def max_producer_id(self) -> int:
        return max((txn.producer_id for txn in self._txns.values()), default=-1)

    # --- replay ----------------------------------------------------------------------------------------------

    def load(self, metadata: TxnMetadata) -> None:
        """Adopt a state replayed from the log (the last record of an id wins)."""
        self._txns[metadata.transactional_id] = metadata

    def pending_completions(self) -> list[Completion]:
        """After a replay: transactions to finish (Prepare* are completed; PrepareEpochFence is aborted)."""
        for txn in self._txns.values():
            if txn.state is TxnState.PREPARE_EPOCH_FENCE:
                txn.state = transition(txn.state, TxnEvent.ABORT_FENCED)
        return self.prepared_completions()

    def prepared_completions(self) -> list[Completion]:
        """The markers every PrepareCommit/PrepareAbort transaction still waits for."""
        prepared = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
        return [_completion(txn) for txn in self._txns.values() if txn.state in prepared]

    # --- InitProducerId --------------------------------------------------------------------------------------

    def needs_producer_id(self, transactional_id: str) -> bool:
        """Whether `init_producer_id` will want a fresh producer id (unknown id, or its epoch is exhausted)."""
        txn = self._txns.get(transactional_id)
        return txn is None or txn.producer_epoch >= MAX_EPOCH - 1

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        now_ms: int,
        *,
        fresh_producer_id: int | None,
        expected_producer_id: int = -1,
        expected_epoch: int = -1,
    ) -> TxnResult:
        """Rule 1: create or bump; an Ongoing transaction is fenced and aborted first (`completion`, and the caller
        calls again once it is complete). `fresh_producer_id` is used when a new id is needed."""
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return TxnResult(INVALID_TRANSACTION_TIMEOUT)
        txn = self._txns.get(transactional_id)
        if txn is None:
            if fresh_producer_id is None:
                return TxnResult(CONCURRENT_TRANSACTIONS)
            txn = TxnMetadata(transactional_id, fresh_producer_id, 0, timeout_ms, last_update_ms=now_ms)
            self._txns[transactional_id] = txn
            return TxnResult(NONE, txn.producer_id, 0, changed=txn.snapshot())
        if expected_producer_id >= 0:  # KIP-360: the producer names the id and epoch it holds
            if expected_producer_id != txn.producer_id:
                return TxnResult(INVALID_PRODUCER_ID_MAPPING)
            if expected_epoch not in (txn.producer_epoch, txn.last_producer_epoch):
                return TxnResult(PRODUCER_FENCED)
        if txn.state in PREPARING:
            return TxnResult(CONCURRENT_TRANSACTIONS)
        if txn.state is TxnState.ONGOING:
            return self._fence_and_abort(txn, now_ms)
        if txn.producer_epoch >= MAX_EPOCH - 1:
            if fresh_producer_id is None:
                return TxnResult(CONCURRENT_TRANSACTIONS)
            txn.producer_id, txn.producer_epoch = fresh_producer_id, 0
        else:
            txn.producer_epoch += 1
        txn.last_producer_epoch = -1
        txn.state = transition(txn.state, TxnEvent.INIT)
        txn.timeout_ms = timeout_ms
        txn.partitions.clear()
        txn.start_ms = -1
        txn.last_update_ms = now_ms
        return TxnResult(NONE, txn.producer_id, txn.producer_epoch, changed=txn.snapshot())

    def _fence_and_abort(self, txn: TxnMetadata, now_ms: int) -> TxnResult:
        txn.state = transition(txn.state, TxnEvent.FENCE)
        if txn.producer_epoch < MAX_EPOCH:
            txn.producer_epoch += 1
        txn.state = transition(txn.state, TxnEvent.ABORT_FENCED)
        txn.last_update_ms = now_ms
        return TxnResult(CONCURRENT_TRANSACTIONS, changed=txn.snapshot(), completion=_completion(txn))

    # --- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------------------

    def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[TopicPartition], now_ms: int
    ) -> TxnResult:
        """Rule 3: add `partitions` to the transaction, starting it if none is ongoing."""
        txn = self._txns.get(transactional_id)
        error = self._check_producer(txn, producer_id, epoch)
        if error or txn is None:
            return TxnResult(error or INVALID_PRODUCER_ID_MAPPING)
        if txn.state in PREPARING:
            return TxnResult(CONCURRENT_TRANSACTIONS)
        wanted = set(partitions)
        if txn.state is TxnState.ONGOING and wanted <= txn.partitions:
            return TxnResult(NONE, txn.producer_id, txn.producer_epoch)
        if txn.state is not TxnState.ONGOING:
            txn.partitions.clear()
            txn.start_ms = now_ms
        txn.state = transition(txn.state, TxnEvent.ADD_PARTITIONS)
        txn.partitions |= wanted
        txn.last_update_ms = now_ms
        return TxnResult(NONE, txn.producer_id, txn.producer_epoch, changed=txn.snapshot())

    def verify_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """Rule 3, verify-only: (error for all, else per-partition 0 or INVALID_TXN_STATE). Changes nothing."""
        txn = self._txns.get(transactional_id)
        error = self._check_producer(txn, producer_id, epoch)
        if error or txn is None:
            return error or INVALID_PRODUCER_ID_MAPPING, {}
        ongoing = txn.partitions if txn.state is TxnState.ONGOING else set()
        return NONE, {tp: NONE if tp in ongoing else INVALID_TXN_STATE for tp in partitions}

    def check_write(self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition) -> int:
        """Whether a transactional write (a produced batch, a TxnOffsetCommit) may go to `partition` now:
        the producer's id and epoch are current and the partition is in its ongoing transaction."""
        txn = self._txns.get(transactional_id)
        error = self._check_producer(txn, producer_id, epoch)
        if error or txn is None:
            return error or INVALID_PRODUCER_ID_MAPPING
        if txn.state is not TxnState.ONGOING or partition not in txn.partitions:
            return INVALID_TXN_STATE
        return NONE

    # --- EndTxn ----------------------------------------------------------------------------------------------

    def end_needs_producer_id(self, transactional_id: str) -> bool:
        """Whether an EndTxn v5+ now would overflow the epoch and so needs a fresh producer id (rule 4)."""
        txn = self._txns.get(transactional_id)
        return txn is not None and txn.producer_epoch >= MAX_EPOCH

    def end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        now_ms: int,
        *,
        bump_epoch: bool,
        fresh_producer_id: int | None = None,
    ) -> TxnResult:
        """Rule 4: prepare the commit or abort; with `bump_epoch` (EndTxn v5+, transaction version 2) the epoch goes
        up here, and past the last epoch the id moves on to `fresh_producer_id` once the markers are written."""
        txn = self._txns.get(transactional_id)
        if txn is None:
            return TxnResult(INVALID_PRODUCER_ID_MAPPING)
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        retry_on_overflow = (
            bump_epoch
            and producer_id == txn.previous_producer_id
            and epoch == txn.last_producer_epoch == MAX_EPOCH
            and txn.producer_epoch == 0
        )
        if txn.producer_id != producer_id and not retry_on_overflow:
            return TxnResult(INVALID_PRODUCER_ID_MAPPING)
        retry_on_bump = bump_epoch and epoch == txn.last_producer_epoch and epoch == txn.producer_epoch - 1
        if retry_on_overflow or retry_on_bump:
            # A retry of the EndTxn that bumped the epoch: the same outcome again; anything else contradicts it.
            if txn.state is done:
                return TxnResult(NONE, txn.producer_id, txn.producer_epoch)
            if txn.state in PREPARING:
                return TxnResult(CONCURRENT_TRANSACTIONS)
            return TxnResult(INVALID_TXN_STATE)
        if epoch < txn.producer_epoch:
            return TxnResult(PRODUCER_FENCED)
        if epoch > txn.producer_epoch:
            return TxnResult(INVALID_PRODUCER_EPOCH)
        if txn.state in PREPARING:
            wanted = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            return TxnResult(CONCURRENT_TRANSACTIONS if txn.state is wanted else INVALID_TXN_STATE)
        if txn.state is done and not bump_epoch:
            return TxnResult(NONE, txn.producer_id, txn.producer_epoch)
        empty_abort = bump_epoch and not commit and txn.state is not TxnState.ONGOING
        if txn.state is not TxnState.ONGOING and not empty_abort:
            return TxnResult(INVALID_TXN_STATE)
        if bump_epoch and txn.producer_epoch >= MAX_EPOCH and fresh_producer_id is None:
            return TxnResult(CONCURRENT_TRANSACTIONS)  # the caller allocates an id and asks again
        txn.state = transition(txn.state, TxnEvent.END_COMMIT if commit else TxnEvent.END_ABORT)
        txn.client_transaction_version = 2 if bump_epoch else 0
        if empty_abort:
            txn.partitions.clear()
        if bump_epoch:
            txn.last_producer_epoch = txn.producer_epoch
            txn.producer_epoch += 1  # at most 32767, the epoch of the last markers before a new id
            if txn.producer_epoch > MAX_EPOCH:
                assert fresh_producer_id is not None
                txn.next_producer_id = fresh_producer_id
        txn.last_update_ms = now_ms
        answer_id, answer_epoch = (
            (txn.next_producer_id, 0) if txn.next_producer_id >= 0 else (txn.producer_id, txn.producer_epoch)
        )
        return TxnResult(NONE, answer_id, answer_epoch, changed=txn.snapshot(), completion=_completion(txn))

    def complete(self, transactional_id: str, now_ms: int) -> TxnMetadata:
        """The markers of a prepared transaction are written: CompleteCommit/CompleteAbort, partitions cleared; an
        overflowed epoch moves on to the next producer id at epoch 0 (the old id is kept as the previous one)."""
        txn = self._txns[transactional_id]
        txn.state = transition(txn.state, TxnEvent.MARKERS_WRITTEN)
        if txn.next_producer_id >= 0:
            txn.previous_producer_id, txn.producer_id = txn.producer_id, txn.next_producer_id
            txn.producer_epoch, txn.last_producer_epoch, txn.next_producer_id = 0, MAX_EPOCH, -1
        txn.partitions.clear()
        txn.start_ms = -1
        txn.last_update_ms = now_ms
        return txn.snapshot()

    # --- timeouts --------------------------------------------------------------------------------------------

    def expire(self, now_ms: int) -> list[TxnResult]:
        """Rule 5: abort every transaction Ongoing for longer than its timeout, fencing its producer first."""
        expired = []
        for txn in self._txns.values():
            if txn.state is TxnState.ONGOING and now_ms > txn.start_ms + txn.timeout_ms:
                if txn.producer_epoch < MAX_EPOCH:
                    txn.producer_epoch += 1
                txn.last_producer_epoch = -1
                txn.state = transition(txn.state, TxnEvent.TIMEOUT)
                txn.last_update_ms = now_ms
                expired.append(TxnResult(NONE, changed=txn.snapshot(), completion=_completion(txn)))
        return expired

    def expire_ids(self, now_ms: int, expiration_ms: int) -> list[str]:
        """Rule 7: forget the ids idle (Empty, CompleteCommit, CompleteAbort) for longer than `expiration_ms`; the
        caller writes a tombstone for each."""
        idle = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        expired = [
            tid
            for tid, txn in self._txns.items()
            if txn.state in idle and txn.last_update_ms >= 0 and now_ms - txn.last_update_ms > expiration_ms
        ]
        for tid in expired:
            del self._txns[tid]
        return expired

    def forget(self, transactional_id: str) -> None:
        """Replay of a tombstone: the id expired before the restart."""
        self._txns.pop(transactional_id, None)

    # --- listing ---------------------------------------------------------------------------------------------

    def list_transactions(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = (), min_duration_ms: int = -1, now_ms: int = 0
    ) -> list[TxnMetadata]:
        """ListTransactions' filters: state names, producer ids, and (v1+) running for at least `min_duration_ms`."""
        wanted_states, wanted_ids = set(states), set(producer_ids)
        return [
            txn
            for txn in self._txns.values()
            if (not wanted_states or txn.state.label in wanted_states)
            and (not wanted_ids or txn.producer_id in wanted_ids)
            and (min_duration_ms < 0 or (txn.start_ms >= 0 and now_ms - txn.start_ms >= min_duration_ms))
        ]

    # --- internals -------------------------------------------------------------------------------------------

    @staticmethod
    def _check_producer(txn: TxnMetadata | None, producer_id: int, epoch: int) -> int:
        if txn is None or txn.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if epoch < txn.producer_epoch:
            return PRODUCER_FENCED
        if epoch > txn.producer_epoch:
            return INVALID_PRODUCER_EPOCH
        return NONE


def _completion(txn: TxnMetadata) -> Completion:
    return Completion(
        txn.transactional_id,
        txn.producer_id,
        txn.producer_epoch,
        txn.state is TxnState.PREPARE_COMMIT,
        frozenset(txn.partitions),
    )
