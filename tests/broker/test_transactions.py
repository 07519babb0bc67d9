"""Transactions in the domain broker, on both engines: markers, the last stable offset, read_committed reads, the
aborted-transaction index, transactional offsets, fencing, timeouts, and recovery across restarts."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import kafkalite
from kafkalite import errors
from kafkalite.broker import LATEST, OFFSETS_TOPIC
from kafkalite.broker.log_reader import scan_records
from kafkalite.protocol.control_records import control_type
from kafkalite.protocol.records import BatchHeader, RecordToWrite, build_batch, iter_records, read_header
from kafkalite.storage import AbortedTxn
from kafkalite.transactions import TxnState

from .harness import BrokerFactory

TOPIC = "t"


def txn_batch(pid: int, epoch: int, sequence: int, *values: bytes) -> bytes:
    records = [RecordToWrite(v, None) for v in values]
    return build_batch(
        records,
        now_ms=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=True,
    )


def batches(data: bytes) -> list[tuple[str, list[bytes | None]]]:
    """Each batch as ("data", values) or ("commit"/"abort", [])."""
    out: list[tuple[str, list[bytes | None]]] = []
    pos = 0
    while pos < len(data):
        header = read_header(data, pos)
        if header.is_control:
            kind = control_type(data, pos, header)
            out.append((kind.name.lower() if kind is not None else "control", []))
        else:
            out.append(("data", [r.value for r in iter_records(data, pos)]))
        pos += header.size
    return out


async def begin(broker: kafkalite.Broker, tid: str = "tx", *partitions: tuple[str, int]) -> tuple[int, int]:
    pid, epoch = await broker.init_producer_id(tid)
    result = await broker.transactions.add_partitions(tid, pid, epoch, partitions or [(TOPIC, 0)])
    assert result.error == 0
    return pid, epoch


async def test_commit_writes_markers_and_moves_the_lso(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    pid, epoch = await begin(broker, "tx", (TOPIC, 0), (TOPIC, 1))
    await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"a", b"b"), transactional_id="tx")
    await broker.append(TOPIC, 0, txn_batch(pid, epoch, 2, b"c"), transactional_id="tx")
    partition = broker.partition(TOPIC, 0)
    assert (partition.last_stable_offset, partition.high_watermark) == (0, 3)
    committed = broker.fetch(TOPIC, 0, 0, 1 << 20, read_committed=True)
    assert (committed.records, committed.last_stable_offset, committed.aborted_transactions) == (b"", 0, [])
    assert broker.list_offset(TOPIC, 0, LATEST, read_committed=True) == (0, -1)
    assert broker.list_offset(TOPIC, 0, LATEST) == (3, -1)
    assert [kind for kind, _ in batches(broker.fetch(TOPIC, 0, 0, 1 << 20).records)] == ["data", "data"]

    result = await broker.transactions.end_transaction("tx", pid, epoch, commit=True)
    assert result.error == 0
    assert partition.last_stable_offset == partition.high_watermark == 4
    read = broker.fetch(TOPIC, 0, 0, 1 << 20, read_committed=True)
    assert batches(read.records) == [("data", [b"a", b"b"]), ("data", [b"c"]), ("commit", [])]
    assert read.aborted_transactions == []
    assert batches(broker.fetch(TOPIC, 1, 0, 1 << 20).records) == [("commit", [])]  # every partition gets a marker
    txn = broker.transactions.describe("tx")
    assert txn is not None
    assert txn.state is TxnState.COMPLETE_COMMIT
    assert not txn.partitions


async def test_abort_is_indexed_and_reported_to_read_committed(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC)
    await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"plain", None)], now_ms=int(time.time() * 1000)))
    pid, epoch = await begin(broker)
    await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"x", b"y"), transactional_id="tx")
    await broker.transactions.end_transaction("tx", pid, epoch, commit=False)
    read = broker.fetch(TOPIC, 0, 0, 1 << 20, read_committed=True)
    assert [kind for kind, _ in batches(read.records)] == ["data", "data", "abort"]
    assert read.aborted_transactions == [AbortedTxn(pid, 1, 3, 4)]
    assert broker.fetch(TOPIC, 0, 4, 1 << 20, read_committed=True).aborted_transactions == []
    assert broker.fetch(TOPIC, 0, 0, 1 << 20).aborted_transactions is None  # read_uncommitted: no list at all


async def test_read_committed_stops_before_the_first_open_transaction(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC)
    pid1, epoch1 = await begin(broker, "one")
    pid2, epoch2 = await begin(broker, "two")
    await broker.append(TOPIC, 0, txn_batch(pid1, epoch1, 0, b"1a"), transactional_id="one")
    await broker.append(TOPIC, 0, txn_batch(pid2, epoch2, 0, b"2a"), transactional_id="two")
    await broker.transactions.end_transaction("two", pid2, epoch2, commit=True)
    partition = broker.partition(TOPIC, 0)
    assert partition.last_stable_offset == 0  # "one" still holds it down
    await broker.transactions.end_transaction("one", pid1, epoch1, commit=True)
    assert partition.last_stable_offset == 4


async def test_transactional_writes_need_the_partition_and_the_current_epoch(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    pid, epoch = await begin(broker)
    with pytest.raises(errors.TransactionError) as refused:
        await broker.append(TOPIC, 1, txn_batch(pid, epoch, 0, b"x"), transactional_id="tx")
    assert refused.value.error_code == 48  # INVALID_TXN_STATE: partition 1 was never added
    with pytest.raises(errors.TransactionError):
        await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"x"))  # no transactional id at all
    new_pid, new_epoch = await broker.init_producer_id("tx")  # a new instance fences the old one
    assert (new_pid, new_epoch) == (pid, epoch + 2)  # +1 fencing the ongoing transaction, +1 for the new instance
    with pytest.raises(errors.InvalidProducerEpochError):
        await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"zombie"), transactional_id="tx")
    assert broker.partition(TOPIC, 1).high_watermark == 0
    # The fenced transaction was aborted (it had nothing written here, so no index entry, only the marker).
    assert [kind for kind, _ in batches(broker.fetch(TOPIC, 0, 0, 1 << 20).records)] == ["abort"]


async def test_transactional_offsets_count_only_at_commit(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await broker.init_producer_id("tx")
    assert (await broker.transactions.add_offsets("tx", pid, epoch, "g")).error == 0
    error = await broker.transactions.commit_offsets("tx", "g", pid, epoch, [(TOPIC, 0, 42, "", -1)])
    assert error == 0
    assert broker.offsets.fetch("g", TOPIC, 0) is None
    assert broker.offsets.has_pending("g", TOPIC, 0)
    await broker.transactions.end_transaction("tx", pid, epoch, commit=True)
    committed = broker.offsets.fetch("g", TOPIC, 0)
    assert committed is not None
    assert committed.offset == 42

    pid, epoch = await broker.init_producer_id("tx")
    await broker.transactions.add_offsets("tx", pid, epoch, "g")
    await broker.transactions.commit_offsets("tx", "g", pid, epoch, [(TOPIC, 0, 99, "", -1)])
    await broker.transactions.end_transaction("tx", pid, epoch, commit=False)
    committed = broker.offsets.fetch("g", TOPIC, 0)
    assert committed is not None
    assert committed.offset == 42
    # Outside a transaction that added the offsets partition, TxnOffsetCommit is refused.
    assert await broker.transactions.commit_offsets("tx", "g", pid, epoch, [(TOPIC, 0, 7, "", -1)]) == 48


async def test_expired_transaction_is_aborted_and_its_producer_fenced(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await broker.init_producer_id("tx", transaction_timeout_ms=100)
    await broker.transactions.add_partitions("tx", pid, epoch, [(TOPIC, 0)])
    await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"late"), transactional_id="tx")
    assert await broker.transactions.abort_expired(int(time.time() * 1000)) == 0
    assert await broker.transactions.abort_expired(int(time.time() * 1000) + 200) == 1
    assert broker.partition(TOPIC, 0).last_stable_offset == 2
    assert broker.fetch(TOPIC, 0, 0, 1 << 20, read_committed=True).aborted_transactions == [AbortedTxn(pid, 0, 1, 2)]
    result = await broker.transactions.end_transaction("tx", pid, epoch, commit=True)
    assert result.error == 90  # PRODUCER_FENCED: the producer learns its transaction is gone


async def test_restart_completes_a_prepared_commit_and_aborts_an_open_transaction(tmp_path: Path) -> None:
    factory = BrokerFactory("file", tmp_path)
    async with factory(transaction_abort_interval_ms=60_000) as broker:  # no sweep: it would finish the "crash"
        await broker.create_topic(TOPIC, partitions=2)
        pid, epoch = await begin(broker, "prepared", (TOPIC, 0))
        await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"keep"), transactional_id="prepared")
        # Crash between persisting PrepareCommit and writing the markers: do step 1 of a completion only.
        service = broker.transactions
        prepared = service.coordinator.end_transaction("prepared", pid, epoch, True, 0, bump_epoch=False)
        assert prepared.changed is not None
        await service._log.write(prepared.changed)
        pid2, epoch2 = await broker.init_producer_id("open", transaction_timeout_ms=300)
        await broker.transactions.add_partitions("open", pid2, epoch2, [(TOPIC, 1)])
        await broker.append(TOPIC, 1, txn_batch(pid2, epoch2, 0, b"drop"), transactional_id="open")
    async with factory(transaction_abort_interval_ms=50) as broker:
        p0, p1 = broker.partition(TOPIC, 0), broker.partition(TOPIC, 1)
        assert batches(broker.fetch(TOPIC, 0, 0, 1 << 20, read_committed=True).records) == [
            ("data", [b"keep"]),
            ("commit", []),
        ]
        assert p0.last_stable_offset == 2
        assert p1.last_stable_offset == 0  # the open transaction was rebuilt from the log
        txn = broker.transactions.describe("open")
        assert txn is not None
        assert txn.state is TxnState.ONGOING
        deadline = time.monotonic() + 10
        while p1.last_stable_offset == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert p1.last_stable_offset == 2
        assert broker.fetch(TOPIC, 1, 0, 1 << 20, read_committed=True).aborted_transactions == [
            AbortedTxn(pid2, 0, 1, 2)
        ]
    async with factory() as broker:  # the abort index survived on disk
        assert broker.fetch(TOPIC, 1, 0, 1 << 20, read_committed=True).aborted_transactions == [
            AbortedTxn(pid2, 0, 1, 2)
        ]
        assert broker.partition(TOPIC, 1).last_stable_offset == 2


async def test_lost_txnindex_is_rebuilt_from_the_log_tail(tmp_path: Path) -> None:
    factory = BrokerFactory("file", tmp_path)
    async with factory() as broker:
        await broker.create_topic(TOPIC)
        pid, epoch = await begin(broker)
        await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"x"), transactional_id="tx")
        await broker.transactions.end_transaction("tx", pid, epoch, commit=False)
        directory = broker.data_dir / f"{TOPIC}-0"  # type: ignore[operator]
    for index in directory.glob("*.txnindex"):
        index.unlink()
    async with factory() as broker:
        assert broker.fetch(TOPIC, 0, 0, 1 << 20, read_committed=True).aborted_transactions == [
            AbortedTxn(pid, 0, 1, 2)
        ]
    assert list(directory.glob("*.txnindex"))


async def test_offsets_topic_replays_transactional_commits(tmp_path: Path) -> None:
    factory = BrokerFactory("file", tmp_path)
    async with factory() as broker:
        await broker.create_topic(TOPIC)
        for offset, commit in ((10, True), (20, False)):
            pid, epoch = await broker.init_producer_id("tx")
            await broker.transactions.add_offsets("tx", pid, epoch, "g")
            await broker.transactions.commit_offsets("tx", "g", pid, epoch, [(TOPIC, 0, offset, "", -1)])
            await broker.transactions.end_transaction("tx", pid, epoch, commit=commit)
        pid, epoch = await broker.init_producer_id("tx")
        await broker.transactions.add_offsets("tx", pid, epoch, "g")
        await broker.transactions.commit_offsets("tx", "g", pid, epoch, [(TOPIC, 0, 30, "", -1)])
    async with factory() as broker:
        committed = broker.offsets.fetch("g", TOPIC, 0)
        assert committed is not None
        assert committed.offset == 10
        assert broker.partition(OFFSETS_TOPIC, 0).last_stable_offset < broker.partition(OFFSETS_TOPIC, 0).high_watermark


async def test_transaction_state_log_compacts_and_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalite.broker import transaction_log

    monkeypatch.setattr(transaction_log, "COMPACT_MIN_RECORDS", 8)
    factory = BrokerFactory("file", tmp_path)
    async with factory() as broker:
        await broker.create_topic(TOPIC)
        for _ in range(6):  # each transaction: InitProducerId, AddPartitions, Prepare, Complete = 4 records
            pid, epoch = await begin(broker)
            await broker.append(TOPIC, 0, txn_batch(pid, epoch, 0, b"x"), transactional_id="tx")
            assert (await broker.transactions.end_transaction("tx", pid, epoch, commit=True)).error == 0
        state = broker.partition(transaction_log.TRANSACTION_STATE_TOPIC, 0)
        assert state.log_start_offset > 0  # compacted: what came before the live snapshot is gone
    async with factory() as broker:
        txn = broker.transactions.describe("tx")
        assert txn is not None
        assert (txn.producer_id, txn.producer_epoch, txn.state) == (pid, epoch, TxnState.COMPLETE_COMMIT)
        assert await broker.init_producer_id("tx") == (pid, epoch + 1)


async def test_a_transaction_open_since_before_the_replayed_tail_keeps_the_lso(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafkalite.broker import partition as partition_module

    factory = BrokerFactory("file", tmp_path)
    async with factory(transaction_abort_interval_ms=60_000) as broker:
        await broker.create_topic(TOPIC)
        pid, epoch = await broker.init_producer_id("long", transaction_timeout_ms=600_000)
        await broker.transactions.add_partitions("long", pid, epoch, [(TOPIC, 0)])
        await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"before", None)], now_ms=int(time.time() * 1000)))
        for sequence in range(5):
            await broker.append(TOPIC, 0, txn_batch(pid, epoch, sequence, b"open"), transactional_id="long")
        for _ in range(5):
            await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"after", None)], now_ms=int(time.time() * 1000)))
    monkeypatch.setattr(partition_module, "PRODUCER_STATE_WINDOW", 3)  # the tail replayed on open misses the start
    async with factory(transaction_abort_interval_ms=60_000) as broker:
        assert broker.partition(TOPIC, 0).last_stable_offset == 1
        assert broker.fetch(TOPIC, 0, 0, 1 << 20, read_committed=True).last_stable_offset == 1


COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}


def keyed_txn_batch(pid: int, epoch: int, sequence: int, key: bytes, value: bytes) -> bytes:
    return build_batch(
        [RecordToWrite(value, key)],
        now_ms=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=True,
    )


async def test_the_log_cleaner_drops_aborted_data_and_waits_for_open_transactions(make_broker: BrokerFactory) -> None:
    async with make_broker() as broker:
        await broker.create_topic(TOPIC, 1, COMPACTED)
        pid, epoch = await begin(broker)
        for i in range(20):
            await broker.append(TOPIC, 0, keyed_txn_batch(pid, epoch, i, b"a%d" % i, b"x" * 60), transactional_id="tx")
        await broker.transactions.end_transaction("tx", pid, epoch, commit=False)
        pid, epoch = await begin(broker)
        for i in range(20):
            await broker.append(TOPIC, 0, keyed_txn_batch(pid, epoch, i, b"c%d" % i, b"y" * 60), transactional_id="tx")
        await broker.transactions.end_transaction("tx", pid, epoch, commit=True)
        pid, epoch = await begin(broker)  # an open transaction: nothing from its segment on may be cleaned
        await broker.append(TOPIC, 0, keyed_txn_batch(pid, epoch, 0, b"open", b"z" * 60), transactional_id="tx")
        for i in range(40):  # plain records after it, so several segments follow the open transaction's
            await broker.produce(TOPIC, 0, build_batch([RecordToWrite(b"p" * 60, b"p%d" % i)], now_ms=0))
        cleaner = broker.cleaner
        assert cleaner is not None
        while await cleaner.clean_once() is not None:
            pass
        keys = [r.key for r in scan_records(broker.partition(TOPIC, 0).log, 0)]
        assert not any(k is not None and k.startswith(b"a") for k in keys), "aborted data is dropped"
        assert {b"c%d" % i for i in range(20)} <= set(keys), "committed data stays"
        assert b"open" in keys
        partition = broker.partition(TOPIC, 0)
        assert partition.last_stable_offset < partition.high_watermark
        # The abort's index entry followed the cleaning into the segment now holding its marker.
        assert [e.producer_id for e in partition.log.aborted_transactions(0, partition.high_watermark)] == [pid]


async def test_idle_transactional_ids_expire_with_a_tombstone(tmp_path: Path) -> None:
    """transactional.id.expiration.ms: an id idle longer than it is forgotten, across a restart too; one with a
    transaction ongoing is not (the transaction timeout deals with it)."""
    factory = BrokerFactory("file", tmp_path)
    async with factory(transactional_id_expiration_ms=60_000, transaction_abort_interval_ms=60_000) as broker:
        await broker.create_topic(TOPIC)
        idle_pid, _ = await broker.init_producer_id("idle")
        await begin(broker, "busy")
        now = int(time.time() * 1000)
        assert await broker.transactions.expire_transactional_ids(now) == []
        assert await broker.transactions.expire_transactional_ids(now + 61_000) == ["idle"]
        assert broker.transactions.describe("idle") is None
        assert broker.transactions.describe("busy") is not None
        state = broker.partition("__transaction_state", 0)
        last = list(scan_records(state.log, 0))[-1]
        assert (last.value, last.key is not None) == (None, True)  # the tombstone
    async with factory(transactional_id_expiration_ms=60_000) as broker:
        assert broker.transactions.describe("idle") is None
        assert broker.transactions.describe("busy") is not None
        pid, epoch = await broker.init_producer_id("idle")  # starts over: a new producer id at epoch 0
        assert (pid != idle_pid, epoch) == (True, 0)


async def test_epoch_overflow_moves_to_a_new_producer_id_and_survives_a_restart(tmp_path: Path) -> None:
    from kafkalite.transactions.coordinator import MAX_EPOCH

    factory = BrokerFactory("file", tmp_path)
    async with factory() as broker:
        await broker.create_topic(TOPIC)
        pid, _ = await broker.init_producer_id("tx")
        txn = broker.transactions.describe("tx")
        assert txn is not None
        txn.producer_epoch = MAX_EPOCH  # as if 32766 transactions had ended with EndTxn v5
        await broker.transactions.add_partitions("tx", pid, MAX_EPOCH, [(TOPIC, 0)])
        await broker.append(TOPIC, 0, txn_batch(pid, MAX_EPOCH, 0, b"x"), transactional_id="tx")
        ended = await broker.transactions.end_transaction("tx", pid, MAX_EPOCH, commit=True, bump_epoch=True)
        assert ended.error == 0
        new_pid = ended.producer_id
        assert (new_pid != pid, ended.producer_epoch) == (True, 0)
        marker = read_header(broker.fetch(TOPIC, 0, 1, 1 << 20).records)
        assert (marker.is_control, marker.producer_id, marker.producer_epoch) == (True, pid, MAX_EPOCH + 1)
    async with factory() as broker:  # TransactionLogValue v1 kept the previous producer id
        txn = broker.transactions.describe("tx")
        assert txn is not None
        assert (txn.producer_id, txn.producer_epoch, txn.previous_producer_id) == (new_pid, 0, pid)
        assert (txn.state, txn.client_transaction_version) == (TxnState.COMPLETE_COMMIT, 2)
        # The new id writes; a late write of the old one is refused.
        assert (await broker.transactions.add_partitions("tx", new_pid, 0, [(TOPIC, 0)])).error == 0
        with pytest.raises(errors.KafkaLiteError):
            await broker.append(TOPIC, 0, txn_batch(pid, MAX_EPOCH, 1, b"late"), transactional_id="tx")


def test_transaction_log_values_v0_and_v1() -> None:
    from kafkalite.broker.transaction_log import decode_value, encode_value, encode_value_v0
    from kafkalite.transactions import TxnMetadata

    txn = TxnMetadata("t", 5, 3, 60_000, TxnState.ONGOING, {("a", 1), ("a", 0), ("b", 2)}, 100, 200)
    assert decode_value("t", encode_value_v0(txn)) == txn  # what this broker wrote before: still read
    plain = encode_value(txn)
    # v1: version 1, then fields as v0 but compact, and an empty tag buffer when every tagged field is at its default.
    assert plain[:2] == b"\x00\x01"
    assert plain[-1:] == b"\x00"
    assert decode_value("t", plain) == txn
    txn.previous_producer_id, txn.next_producer_id, txn.client_transaction_version = 4, 9, 2
    tagged = encode_value(txn)
    assert tagged.endswith(
        b"\x03" + b"\x00\x08" + (4).to_bytes(8, "big") + b"\x01\x08" + (9).to_bytes(8, "big") + b"\x02\x02\x00\x02"
    )
    assert decode_value("t", tagged) == txn
    with pytest.raises(errors.CorruptRecordError):
        decode_value("t", tagged[:-3])


async def test_a_producers_last_marker_outlives_cleaning_and_restart(files: BrokerFactory) -> None:
    """With transaction version 2 the marker carries the epoch EndTxn bumped: once the producer has written nothing
    since, that marker is the only record of its epoch. Cleaning keeps it (the producer's data around it goes), and
    a restart rebuilds the producer's state from it."""
    compacted = {"cleanup.policy": "compact", "segment.bytes": "2048", "delete.retention.ms": "0"}
    async with files(log_cleaner_enable=False) as broker:
        await broker.create_topic(TOPIC, 1, compacted)
        pid, epoch = await begin(broker)
        batch = build_batch(
            [RecordToWrite(b"txn", b"k")], now_ms=1, producer_id=pid, producer_epoch=epoch, transactional=True
        )
        await broker.append(TOPIC, 0, batch, transactional_id="tx")
        ended = await broker.transactions.end_transaction("tx", pid, epoch, commit=True, bump_epoch=True)
        assert (ended.error, ended.producer_epoch) == (0, epoch + 1)
        cleaner = broker.cleaner
        assert cleaner is not None
        later = int(time.time() * 1000) + 60_000
        for rounds in range(3):  # the first cleaning stamps the marker's horizon; later ones may drop what passed it
            for n in range(100):  # another writer's updates of the same key: dirt, and segments past the marker
                value = b"%d:%d" % (rounds, n) + b"x" * 60
                await broker.produce(TOPIC, 0, build_batch([RecordToWrite(value, b"k")], now_ms=n))
            assert await cleaner.clean_once(now_ms=later + rounds) is not None
        log = broker.partition(TOPIC, 0).log
        markers = [
            (h.producer_id, h.producer_epoch)
            for h in _headers(broker.fetch(TOPIC, 0, 0, 1 << 20).records)
            if h.is_control
        ]
        assert markers == [(pid, epoch + 1)]
        assert log.size_bytes < 3 * 2048
    async with files() as broker:
        assert broker.partition(TOPIC, 0).producers.entries()[pid].epoch == epoch + 1


def _headers(data: bytes) -> list[BatchHeader]:
    headers, pos = [], 0
    while pos < len(data):
        headers.append(read_header(data, pos))
        pos += headers[-1].size
    return headers
