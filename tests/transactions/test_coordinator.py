"""The transaction coordinator's rules (`transactions/_state.py`), with time passed in: no sleeping, no storage."""

from __future__ import annotations

import pytest

from kafkalite.transactions import CoordinatorConfig, TransactionCoordinator, TxnState
from kafkalite.transactions._state import TRANSITIONS, InvalidTransition, TxnEvent, transition
from kafkalite.transactions.coordinator import MAX_EPOCH
from kafkalite.transactions.errors import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    PRODUCER_FENCED,
    fenced_for,
)

T0 = 1_000_000
TP = ("orders", 0)


def started(tid: str = "t1", pid: int = 100) -> tuple[TransactionCoordinator, int, int]:
    coordinator = TransactionCoordinator(CoordinatorConfig(max_timeout_ms=60_000))
    result = coordinator.init_producer_id(tid, 10_000, T0, fresh_producer_id=pid)
    assert result.error == 0
    return coordinator, result.producer_id, result.producer_epoch


def test_table_matches_kafkas_valid_previous_states() -> None:
    previous: dict[TxnState, set[TxnState]] = {}
    for (state, _event), target in TRANSITIONS.items():
        previous.setdefault(target, set()).add(state)
    S = TxnState
    assert previous[S.EMPTY] == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert previous[S.ONGOING] == {S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert previous[S.PREPARE_COMMIT] == {S.ONGOING}
    # Kafka 4.0 (KIP-890 part 2): a transaction version 2 abort may start from a state with nothing ongoing.
    assert previous[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert previous[S.COMPLETE_COMMIT] == {S.PREPARE_COMMIT}
    assert previous[S.COMPLETE_ABORT] == {S.PREPARE_ABORT}
    assert previous[S.PREPARE_EPOCH_FENCE] == {S.ONGOING}
    with pytest.raises(InvalidTransition, match="END_COMMIT is not allowed in Empty"):
        transition(S.EMPTY, TxnEvent.END_COMMIT)
    assert [s.code for s in S] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert TxnState.from_code(7) is S.PREPARE_EPOCH_FENCE
    assert TxnState.from_label("Ongoing") is S.ONGOING


def test_init_creates_then_bumps_the_epoch() -> None:
    coordinator, pid, epoch = started()
    assert (pid, epoch) == (100, 0)
    assert not coordinator.needs_producer_id("t1")
    assert coordinator.needs_producer_id("other")
    again = coordinator.init_producer_id("t1", 10_000, T0 + 1, fresh_producer_id=None)
    assert (again.error, again.producer_id, again.producer_epoch) == (0, 100, 1)
    assert again.changed is not None
    assert again.changed.state is TxnState.EMPTY


def test_timeout_above_the_cap_is_refused() -> None:
    coordinator = TransactionCoordinator(CoordinatorConfig(max_timeout_ms=60_000))
    assert coordinator.init_producer_id("t", 60_001, T0, fresh_producer_id=1).error == INVALID_TRANSACTION_TIMEOUT
    assert coordinator.init_producer_id("t", 0, T0, fresh_producer_id=1).error == INVALID_TRANSACTION_TIMEOUT
    assert coordinator.get("t") is None


def test_exhausted_epoch_gets_a_new_producer_id() -> None:
    coordinator, _, _ = started()
    txn = coordinator.get("t1")
    assert txn is not None
    txn.producer_epoch = MAX_EPOCH - 1
    assert coordinator.needs_producer_id("t1")
    assert coordinator.init_producer_id("t1", 10_000, T0, fresh_producer_id=None).error == CONCURRENT_TRANSACTIONS
    result = coordinator.init_producer_id("t1", 10_000, T0, fresh_producer_id=555)
    assert (result.producer_id, result.producer_epoch) == (555, 0)


def test_commit_cycle() -> None:
    coordinator, pid, epoch = started()
    added = coordinator.add_partitions("t1", pid, epoch, [TP, ("orders", 1)], T0 + 5)
    assert added.error == 0
    assert added.changed is not None
    assert added.changed.state is TxnState.ONGOING
    assert coordinator.check_write("t1", pid, epoch, TP) == 0
    assert coordinator.check_write("t1", pid, epoch, ("orders", 2)) == INVALID_TXN_STATE
    ended = coordinator.end_transaction("t1", pid, epoch, True, T0 + 6, bump_epoch=False)
    assert ended.error == 0
    assert ended.completion is not None
    assert ended.completion.commit
    assert ended.completion.partitions == {TP, ("orders", 1)}
    # Until the markers are written, everything waits.
    assert coordinator.add_partitions("t1", pid, epoch, [TP], T0 + 7).error == CONCURRENT_TRANSACTIONS
    assert coordinator.init_producer_id("t1", 10_000, T0, fresh_producer_id=None).error == CONCURRENT_TRANSACTIONS
    assert coordinator.end_transaction("t1", pid, epoch, False, T0, bump_epoch=False).error == INVALID_TXN_STATE
    done = coordinator.complete("t1", T0 + 8)
    assert done.state is TxnState.COMPLETE_COMMIT
    assert not done.partitions
    # A retried EndTxn with the same outcome succeeds; the other outcome is refused.
    assert coordinator.end_transaction("t1", pid, epoch, True, T0, bump_epoch=False).error == 0
    assert coordinator.end_transaction("t1", pid, epoch, False, T0, bump_epoch=False).error == INVALID_TXN_STATE
    # The next transaction starts from CompleteCommit.
    assert coordinator.add_partitions("t1", pid, epoch, [("other", 0)], T0 + 9).error == 0
    txn = coordinator.get("t1")
    assert txn is not None
    assert txn.partitions == {("other", 0)}
    assert txn.start_ms == T0 + 9


def test_end_with_nothing_ongoing_is_invalid_state() -> None:
    coordinator, pid, epoch = started()
    assert coordinator.end_transaction("t1", pid, epoch, True, T0, bump_epoch=False).error == INVALID_TXN_STATE


def test_epoch_bump_per_transaction_kip_890() -> None:
    coordinator, pid, epoch = started()
    coordinator.add_partitions("t1", pid, epoch, [TP], T0)
    ended = coordinator.end_transaction("t1", pid, epoch, False, T0, bump_epoch=True)
    assert (ended.error, ended.producer_epoch) == (0, epoch + 1)
    assert ended.completion is not None
    assert ended.completion.producer_epoch == epoch + 1
    retried = coordinator.end_transaction("t1", pid, epoch, False, T0, bump_epoch=True)
    assert retried.error == CONCURRENT_TRANSACTIONS
    coordinator.complete("t1", T0)
    retried = coordinator.end_transaction("t1", pid, epoch, False, T0, bump_epoch=True)
    assert (retried.error, retried.producer_epoch) == (0, epoch + 1)
    # A retry that contradicts the outcome is refused as Kafka does, whatever its epoch.
    assert coordinator.end_transaction("t1", pid, epoch, True, T0, bump_epoch=True).error == INVALID_TXN_STATE
    # The old epoch can no longer write.
    assert coordinator.add_partitions("t1", pid, epoch, [TP], T0).error == PRODUCER_FENCED
    assert coordinator.add_partitions("t1", pid, epoch + 1, [TP], T0).error == 0


def test_fencing_a_zombie() -> None:
    coordinator, pid, epoch = started()
    coordinator.add_partitions("t1", pid, epoch, [TP], T0)
    # A new instance starts: the ongoing transaction is fenced and aborted first, then the epoch bumped again.
    fenced = coordinator.init_producer_id("t1", 10_000, T0 + 1, fresh_producer_id=None)
    assert fenced.error == CONCURRENT_TRANSACTIONS
    assert fenced.completion is not None
    assert not fenced.completion.commit
    assert fenced.completion.producer_epoch == epoch + 1
    coordinator.complete("t1", T0 + 2)
    new = coordinator.init_producer_id("t1", 10_000, T0 + 3, fresh_producer_id=None)
    assert (new.error, new.producer_epoch) == (0, epoch + 2)
    assert coordinator.add_partitions("t1", pid, epoch, [TP], T0).error == PRODUCER_FENCED
    assert coordinator.end_transaction("t1", pid, epoch, True, T0, bump_epoch=False).error == PRODUCER_FENCED
    assert coordinator.check_write("t1", pid, epoch, TP) == PRODUCER_FENCED
    assert coordinator.add_partitions("t1", pid + 1, new.producer_epoch, [TP], T0).error == (
        INVALID_PRODUCER_ID_MAPPING
    )
    assert coordinator.add_partitions("t1", pid, new.producer_epoch + 5, [TP], T0).error == INVALID_PRODUCER_EPOCH
    assert fenced_for(PRODUCER_FENCED, 1, 2) == INVALID_PRODUCER_EPOCH
    assert fenced_for(PRODUCER_FENCED, 2, 2) == 90


def test_kip_360_init_with_the_current_id_and_epoch() -> None:
    coordinator, pid, epoch = started()
    bumped = coordinator.init_producer_id(
        "t1", 10_000, T0, fresh_producer_id=None, expected_producer_id=pid, expected_epoch=epoch
    )
    assert (bumped.error, bumped.producer_epoch) == (0, epoch + 1)
    stale = coordinator.init_producer_id(
        "t1", 10_000, T0, fresh_producer_id=None, expected_producer_id=pid, expected_epoch=epoch
    )
    assert stale.error == PRODUCER_FENCED
    wrong = coordinator.init_producer_id("t1", 10_000, T0, fresh_producer_id=None, expected_producer_id=pid + 9)
    assert wrong.error == INVALID_PRODUCER_ID_MAPPING


def test_verify_only_changes_nothing() -> None:
    coordinator, pid, epoch = started()
    error, results = coordinator.verify_partitions("t1", pid, epoch, [TP])
    assert (error, results) == (0, {TP: INVALID_TXN_STATE})
    coordinator.add_partitions("t1", pid, epoch, [TP], T0)
    assert coordinator.verify_partitions("t1", pid, epoch, [TP, ("x", 0)]) == (0, {TP: 0, ("x", 0): 48})
    assert coordinator.verify_partitions("t1", pid, epoch - 1, [TP])[0] == PRODUCER_FENCED


def test_expiry_aborts_and_fences() -> None:
    coordinator, pid, epoch = started()
    coordinator.add_partitions("t1", pid, epoch, [TP], T0)
    assert coordinator.expire(T0 + 10_000) == []
    (expired,) = coordinator.expire(T0 + 10_001)
    assert expired.completion is not None
    assert not expired.completion.commit
    assert expired.completion.producer_epoch == epoch + 1
    txn = coordinator.get("t1")
    assert txn is not None
    assert txn.state is TxnState.PREPARE_ABORT
    coordinator.complete("t1", T0 + 10_002)
    assert coordinator.end_transaction("t1", pid, epoch, True, T0, bump_epoch=False).error == PRODUCER_FENCED


def test_replayed_prepare_states_are_completed() -> None:
    coordinator, pid, epoch = started()
    coordinator.add_partitions("t1", pid, epoch, [TP], T0)
    coordinator.end_transaction("t1", pid, epoch, True, T0, bump_epoch=False)
    snapshot = coordinator.get("t1")
    assert snapshot is not None
    fence = snapshot.snapshot()
    fence.transactional_id, fence.state = "t2", TxnState.PREPARE_EPOCH_FENCE
    replayed = TransactionCoordinator()
    replayed.load(snapshot.snapshot())
    replayed.load(fence)
    completions = {c.transactional_id: c.commit for c in replayed.pending_completions()}
    assert completions == {"t1": True, "t2": False}


def test_list_filters() -> None:
    coordinator, pid, epoch = started()
    coordinator.init_producer_id("t2", 10_000, T0, fresh_producer_id=200)
    coordinator.add_partitions("t1", pid, epoch, [TP], T0)
    assert {t.transactional_id for t in coordinator.list_transactions()} == {"t1", "t2"}
    assert [t.transactional_id for t in coordinator.list_transactions(states=["Ongoing"])] == ["t1"]
    assert [t.transactional_id for t in coordinator.list_transactions(producer_ids=[200])] == ["t2"]
    assert [t.transactional_id for t in coordinator.list_transactions(min_duration_ms=5, now_ms=T0 + 5)] == ["t1"]
    assert coordinator.list_transactions(min_duration_ms=6, now_ms=T0 + 5) == []


def test_transaction_version_2_abort_with_nothing_ongoing_bumps_the_epoch() -> None:
    coordinator, pid, epoch = started()
    # Version 1: nothing to abort.
    assert coordinator.end_transaction("t1", pid, epoch, False, T0, bump_epoch=False).error == INVALID_TXN_STATE
    # Version 2 (EndTxn v5+): the abort bumps the epoch and writes no marker.
    aborted = coordinator.end_transaction("t1", pid, epoch, False, T0 + 1, bump_epoch=True)
    assert (aborted.error, aborted.producer_id, aborted.producer_epoch) == (0, pid, epoch + 1)
    assert aborted.completion is not None
    assert aborted.completion.partitions == frozenset()
    assert aborted.changed is not None
    assert aborted.changed.state is TxnState.PREPARE_ABORT
    assert aborted.changed.client_transaction_version == 2
    done = coordinator.complete("t1", T0 + 2)
    assert (done.state, done.producer_epoch, done.last_producer_epoch) == (TxnState.COMPLETE_ABORT, epoch + 1, epoch)
    # Its retry gets the same answer; a commit with nothing ongoing stays invalid.
    retried = coordinator.end_transaction("t1", pid, epoch, False, T0 + 3, bump_epoch=True)
    assert (retried.error, retried.producer_epoch, retried.changed) == (0, epoch + 1, None)
    assert coordinator.end_transaction("t1", pid, epoch + 1, True, T0, bump_epoch=True).error == INVALID_TXN_STATE
    # Another abort from CompleteAbort bumps again.
    again = coordinator.end_transaction("t1", pid, epoch + 1, False, T0 + 4, bump_epoch=True)
    assert (again.error, again.producer_epoch) == (0, epoch + 2)


def test_transaction_version_2_epoch_overflow_moves_to_a_new_producer_id() -> None:
    coordinator, pid, _ = started()
    txn = coordinator.get("t1")
    assert txn is not None
    txn.producer_epoch = MAX_EPOCH  # 32766: the last epoch a client is given
    coordinator.add_partitions("t1", pid, MAX_EPOCH, [TP], T0)
    assert coordinator.end_needs_producer_id("t1")
    # Without a fresh id the coordinator asks to be called again (the service allocates one first).
    waiting = coordinator.end_transaction("t1", pid, MAX_EPOCH, True, T0, bump_epoch=True)
    assert (waiting.error, waiting.changed) == (CONCURRENT_TRANSACTIONS, None)
    ended = coordinator.end_transaction("t1", pid, MAX_EPOCH, True, T0, bump_epoch=True, fresh_producer_id=777)
    assert (ended.error, ended.producer_id, ended.producer_epoch) == (0, 777, 0)
    assert ended.completion is not None
    assert (ended.completion.producer_id, ended.completion.producer_epoch) == (pid, MAX_EPOCH + 1)  # 32767
    assert ended.changed is not None
    assert (ended.changed.producer_id, ended.changed.next_producer_id) == (pid, 777)
    done = coordinator.complete("t1", T0 + 1)
    assert (done.producer_id, done.producer_epoch, done.previous_producer_id, done.next_producer_id) == (
        777,
        0,
        pid,
        -1,
    )
    # A retry of the overflowing EndTxn (old id, last epoch) is recognised through the previous producer id.
    retried = coordinator.end_transaction("t1", pid, MAX_EPOCH, True, T0 + 2, bump_epoch=True)
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (0, 777, 0)
    # The old id is no longer the transactional id's for anything else.
    assert coordinator.add_partitions("t1", pid, MAX_EPOCH, [TP], T0).error == INVALID_PRODUCER_ID_MAPPING
    assert coordinator.add_partitions("t1", 777, 0, [TP], T0).error == 0


def test_idle_transactional_ids_expire() -> None:
    coordinator, pid, _ = started()
    coordinator.init_producer_id("busy", 10_000, T0, fresh_producer_id=pid + 1)
    coordinator.add_partitions("busy", pid + 1, 0, [TP], T0)
    week = 7 * 24 * 3600 * 1000
    assert coordinator.expire_ids(T0 + week, week) == []  # not longer than the expiration yet
    # Only ids with nothing ongoing expire; an Ongoing one is the timeout's business (rule 5).
    assert coordinator.expire_ids(T0 + week + 1, week) == ["t1"]
    assert coordinator.get("t1") is None
    assert coordinator.get("busy") is not None
    # An expired id starts over with a new producer id.
    assert coordinator.needs_producer_id("t1")
