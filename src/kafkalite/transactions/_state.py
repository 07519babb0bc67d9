"""The life cycle of one transactional id: its states, the events that move it, and the rules (KIP-98, KIP-890).

Every state change goes through `transition()` below, checked against `TRANSITIONS`; nothing else in
`kafkalite.transactions` assigns a transaction's state. The table is Kafka's `TransactionState.validPreviousStates`,
turned around and named by the event that causes each move::

    (new id) ─INIT─► Empty ─ADD_PARTITIONS─► Ongoing ─END_COMMIT─► PrepareCommit ─MARKERS_WRITTEN─► CompleteCommit
                                              │  │ └─END_ABORT / TIMEOUT─► PrepareAbort ─MARKERS_WRITTEN─► CompleteAbort
                                              │  └─FENCE─► PrepareEpochFence ─ABORT_FENCED─► PrepareAbort
                                              └─ADD_PARTITIONS─► Ongoing
    Empty, CompleteCommit, CompleteAbort ─INIT─► Empty        CompleteCommit, CompleteAbort ─ADD_PARTITIONS─► Ongoing

Rules (each is what Apache Kafka's TransactionCoordinator does; `coordinator.py` implements them):

1. InitProducerId with a transactional id creates it (a new producer id, epoch 0) or bumps its epoch, which fences
   every older instance: a request with an older epoch gets PRODUCER_FENCED (90; INVALID_PRODUCER_EPOCH, 47, to
   clients older than KIP-588). When the epoch would pass 32766 a new producer id is handed out at epoch 0.
   Meeting an Ongoing transaction, it first fences and aborts it (FENCE, then ABORT_FENCED), then bumps again.
   In PrepareCommit/PrepareAbort it answers CONCURRENT_TRANSACTIONS (51): retry once the markers are written.
2. The transaction timeout is the producer's `transaction.timeout.ms`, at most the broker's
   `transaction.max.timeout.ms` (else INVALID_TRANSACTION_TIMEOUT, 50).
3. AddPartitionsToTxn / AddOffsetsToTxn (ADD_PARTITIONS) start a transaction (Empty/Complete* → Ongoing, the start
   time is taken) or extend it. A producer id the transactional id does not hold gets INVALID_PRODUCER_ID_MAPPING
   (49); a stale epoch is fenced (rule 1); in a Prepare* state, CONCURRENT_TRANSACTIONS.
   The v4+ verify-only form (KIP-890 part 1) changes nothing: each partition answers 0 if it is in the ongoing
   transaction, else INVALID_TXN_STATE (48).
4. EndTxn (END) moves Ongoing to PrepareCommit or PrepareAbort; the broker then writes a marker to every partition
   of the transaction and completes it (MARKERS_WRITTEN → CompleteCommit/CompleteAbort, partitions cleared).
   With EndTxn v5+ (KIP-890 part 2, transaction version 2) the epoch is bumped at END, so the markers and the next
   transaction carry the new epoch and a late write of the old one is fenced; the answer carries the new epoch. At
   the last epoch (32766) the markers carry 32767 and the transactional id moves on to a new producer id at epoch 0
   once they are written (the old one is kept as the previous producer id, so a retried EndTxn of it is known).
   Also in version 2, an abort with nothing ongoing (Empty, Complete*) bumps the epoch without markers: a client
   recovers from an abortable error that way. A retried EndTxn that matches the completed outcome succeeds again;
   one that contradicts it, or a commit with nothing ongoing, gets INVALID_TXN_STATE.
   With version 2 the client sends no AddPartitionsToTxn or AddOffsetsToTxn: the broker adds a partition when a
   Produce v12+ writes to it, and `__consumer_offsets` when a TxnOffsetCommit v5+ commits (ADD_PARTITIONS as in 3).
5. A transaction Ongoing for longer than its timeout is aborted by the coordinator on its own (TIMEOUT): the epoch is
   bumped first, so the producer learns of it by being fenced at its next request, then markers are written.
6. On start the state is replayed from the log; a transaction found in PrepareCommit/PrepareAbort is completed
   (markers written again: a duplicate marker is harmless), one in PrepareEpochFence is aborted, one Ongoing is
   aborted by rule 5 no later than its timeout after its start.
7. A transactional id whose state is Empty, CompleteCommit or CompleteAbort and that has not changed for
   `transactional.id.expiration.ms` is forgotten (Dead), and the log records a tombstone for it.
"""

from __future__ import annotations

import enum


class TxnState(enum.Enum):
    """A transaction's state; `.label` is the name DescribeTransactions and ListTransactions use, `.code` the byte
    `__transaction_state` records (Kafka's TransactionState ids)."""

    EMPTY = ("Empty", 0)
    ONGOING = ("Ongoing", 1)
    PREPARE_COMMIT = ("PrepareCommit", 2)
    PREPARE_ABORT = ("PrepareAbort", 3)
    COMPLETE_COMMIT = ("CompleteCommit", 4)
    COMPLETE_ABORT = ("CompleteAbort", 5)
    DEAD = ("Dead", 6)
    PREPARE_EPOCH_FENCE = ("PrepareEpochFence", 7)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def code(self) -> int:
        return self.value[1]

    @classmethod
    def from_code(cls, code: int) -> TxnState:
        for state in cls:
            if state.code == code:
                return state
        raise ValueError(f"unknown transaction state code {code}")

    @classmethod
    def from_label(cls, label: str) -> TxnState | None:
        return next((state for state in cls if state.label == label), None)


class TxnEvent(enum.Enum):
    INIT = enum.auto()
    ADD_PARTITIONS = enum.auto()
    END_COMMIT = enum.auto()
    END_ABORT = enum.auto()
    TIMEOUT = enum.auto()
    FENCE = enum.auto()
    ABORT_FENCED = enum.auto()
    MARKERS_WRITTEN = enum.auto()


S, E = TxnState, TxnEvent
COMPLETE = (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)

TRANSITIONS: dict[tuple[TxnState, TxnEvent], TxnState] = {
    **{(state, E.INIT): S.EMPTY for state in (S.EMPTY, *COMPLETE)},
    **{(state, E.ADD_PARTITIONS): S.ONGOING for state in (S.EMPTY, S.ONGOING, *COMPLETE)},
    (S.ONGOING, E.END_COMMIT): S.PREPARE_COMMIT,
    (S.ONGOING, E.END_ABORT): S.PREPARE_ABORT,
    # Transaction version 2 (EndTxn v5+): an abort with nothing ongoing still bumps the epoch (no markers to write).
    **{(state, E.END_ABORT): S.PREPARE_ABORT for state in (S.EMPTY, *COMPLETE)},
    (S.ONGOING, E.TIMEOUT): S.PREPARE_ABORT,
    (S.ONGOING, E.FENCE): S.PREPARE_EPOCH_FENCE,
    (S.PREPARE_EPOCH_FENCE, E.ABORT_FENCED): S.PREPARE_ABORT,
    (S.PREPARE_COMMIT, E.MARKERS_WRITTEN): S.COMPLETE_COMMIT,
    (S.PREPARE_ABORT, E.MARKERS_WRITTEN): S.COMPLETE_ABORT,
}

PREPARING = (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE)


class InvalidTransition(Exception):
    """A transition the table does not allow: a bug in the coordinator, never a client's doing."""


def transition(state: TxnState, event: TxnEvent) -> TxnState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise InvalidTransition(f"{event.name} is not allowed in {state.label}") from None
