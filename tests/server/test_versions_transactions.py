"""Every served version of the transaction APIs over raw bytes: a whole transaction per version, from FindCoordinator
(key type 1) and InitProducerId through AddPartitionsToTxn, a transactional Produce, AddOffsetsToTxn, TxnOffsetCommit
and EndTxn to read_committed Fetch and ListOffsets, DescribeTransactions, ListTransactions and DescribeProducers.
Each response decodes whole (`RawClient.decode_response` checks every byte is consumed)."""

from __future__ import annotations

import struct
import time
from typing import Any

import pytest

from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import supported_ranges
from wire_requests import consumer_fetch

pytestmark = pytest.mark.timeout(60)

RANGES = {api_key: list(range(lo, hi + 1)) for api_key, lo, hi in supported_ranges()}
TOPIC = "txn-topic"


def txn_batch(pid: int, epoch: int, sequence: int, *values: bytes) -> bytes:
    return build_batch(
        [RecordToWrite(v) for v in values],
        now_ms=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=True,
    )


def nearest(api_key: int, version: int) -> int:
    versions = RANGES[api_key]
    return min(max(version, versions[0]), versions[-1])


async def init(raw: Any, tid: str, version: int = 4, timeout_ms: int = 60_000) -> tuple[int, int]:
    response = await raw.request(
        22,
        version,
        transactional_id=tid,
        transaction_timeout=timeout_ms,
        producer_id=-1,
        producer_epoch=-1,
        enable2_pc=False,
        keep_prepared_txn=False,
    )
    assert response.error_code == 0
    return int(response.producer_id), int(response.producer_epoch)


async def add_partitions(raw: Any, version: int, tid: str, pid: int, epoch: int, verify_only: bool = False) -> Any:
    topic = raw.nested(24, version, "AddPartitionsToTxnTopic", name=TOPIC, partitions=[0])
    if version <= 3:
        response = await raw.request(
            24,
            version,
            v3_and_below_transactional_id=tid,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[topic],
        )
        (result,) = response.results_by_topic_v3_and_below
    else:
        txn = raw.nested(
            24,
            version,
            "AddPartitionsToTxnTransaction",
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch,
            verify_only=verify_only,
            topics=[topic],
        )
        response = await raw.request(24, version, transactions=[txn])
        assert response.error_code == 0
        (txn_result,) = response.results_by_transaction
        assert txn_result.transactional_id == tid
        (result,) = txn_result.topic_results
    assert result.name == TOPIC
    return result.results_by_partition[0].partition_error_code


@pytest.mark.parametrize("version", RANGES[ApiKey.FIND_COORDINATOR])
async def test_find_transaction_coordinator(raw: Any, broker: Broker, version: int) -> None:
    if version == 0:
        pytest.skip("v0 has no key_type: it only finds group coordinators")
    response = await raw.request(10, version, key="tx", key_type=1, coordinator_keys=["tx"])
    answer = response.coordinators[0] if version >= 4 else response
    assert (answer.error_code, answer.node_id) == (0, broker.node_id)
    response = await raw.request(10, version, key="tx", key_type=2, coordinator_keys=["tx"])
    answer = response.coordinators[0] if version >= 4 else response
    assert answer.error_code == 42  # INVALID_REQUEST: share-group coordinators are not served


@pytest.mark.parametrize("version", RANGES[ApiKey.INIT_PRODUCER_ID])
async def test_init_producer_id_with_transactional_id(raw: Any, version: int) -> None:
    tid = f"init-{version}"
    pid, epoch = await init(raw, tid, version)
    assert (await init(raw, tid, version)) == (pid, epoch + 1)
    response = await raw.request(
        22,
        version,
        transactional_id=tid,
        transaction_timeout=10**8,
        producer_id=-1,
        producer_epoch=-1,
        enable2_pc=False,
        keep_prepared_txn=False,
    )
    assert (response.error_code, response.producer_id) == (50, -1)  # INVALID_TRANSACTION_TIMEOUT


@pytest.mark.parametrize("version", RANGES[ApiKey.ADD_PARTITIONS_TO_TXN])
async def test_add_partitions_to_txn(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic(TOPIC)
    tid = f"add-{version}"
    pid, epoch = await init(raw, tid)
    if version >= 4:
        assert await add_partitions(raw, version, tid, pid, epoch, verify_only=True) == 48  # not in it yet
    assert await add_partitions(raw, version, tid, pid, epoch) == 0
    if version >= 4:
        assert await add_partitions(raw, version, tid, pid, epoch, verify_only=True) == 0
    # A stale epoch: PRODUCER_FENCED from v2 on, INVALID_PRODUCER_EPOCH before.
    assert await add_partitions(raw, version, tid, pid, epoch - 1) == (90 if version >= 2 else 47)
    assert await add_partitions(raw, version, tid, pid + 1, epoch) == 49  # INVALID_PRODUCER_ID_MAPPING


@pytest.mark.parametrize("version", RANGES[ApiKey.END_TXN])
async def test_transaction_end_to_end(raw: Any, broker: Broker, version: int) -> None:
    """Produce in a transaction, commit its offsets with it, and commit: read_committed sees it only afterwards."""
    await broker.create_topic(TOPIC)
    tid, group = f"e2e-{version}", f"g-{version}"
    pid, epoch = await init(raw, tid)
    assert await add_partitions(raw, 3, tid, pid, epoch) == 0
    data = raw.nested(0, 9, "PartitionProduceData", index=0, records=txn_batch(pid, epoch, 0, b"a", b"b"))
    topic = raw.nested(0, 9, "TopicProduceData", name=TOPIC, partition_data=[data])
    produced = await raw.request(0, 9, transactional_id=tid, acks=-1, timeout=1000, topic_data=[topic])
    assert produced.responses[0].partition_responses[0].error_code == 0

    added = await raw.request(
        25, nearest(25, version), transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group
    )
    assert added.error_code == 0
    txn_version = nearest(28, version)
    part = raw.nested(
        28,
        txn_version,
        "TxnOffsetCommitRequestPartition",
        partition_index=0,
        committed_offset=2,
        committed_leader_epoch=-1,
        committed_metadata="m",
    )
    offsets = raw.nested(28, txn_version, "TxnOffsetCommitRequestTopic", name=TOPIC, partitions=[part])
    committed = await raw.request(
        28,
        txn_version,
        transactional_id=tid,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=[offsets],
    )
    assert committed.topics[0].partitions[0].error_code == 0
    assert broker.offsets.fetch(group, TOPIC, 0) is None  # not before the commit

    assert (await fetch_committed(raw, 0)) == (0, 0, [])  # LSO 0: nothing readable yet
    assert await list_latest(raw, isolation_level=1) == 0
    assert await list_latest(raw, isolation_level=0) == 2

    ended = await raw.request(26, version, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
    assert ended.error_code == 0
    if version >= 5:  # KIP-890 part 2: the epoch moves on with every transaction
        assert (ended.producer_id, ended.producer_epoch) == (pid, epoch + 1)
    committed_offset = broker.offsets.fetch(group, TOPIC, 0)
    assert committed_offset is not None
    assert committed_offset.offset == 2
    size, lso, aborted = await fetch_committed(raw, 0)
    assert size > 0
    assert lso == 3
    assert aborted == []
    assert await list_latest(raw, isolation_level=1) == 3

    again = await raw.request(
        26, version, transactional_id=tid, producer_id=pid, producer_epoch=epoch - 1, committed=True
    )
    assert again.error_code == (90 if version >= 2 else 47)


async def fetch_committed(raw: Any, offset: int, version: int = 12) -> tuple[int, int, list[tuple[int, int]]]:
    """(bytes returned, last stable offset, aborted transactions) of a read_committed fetch of partition 0."""
    partition = raw.nested(
        1,
        version,
        "FetchPartition",
        partition=0,
        fetch_offset=offset,
        partition_max_bytes=1 << 20,
        current_leader_epoch=-1,
        last_fetched_epoch=-1,
        log_start_offset=-1,
    )
    topic = raw.nested(1, version, "FetchTopic", topic=TOPIC, partitions=[partition])
    response = await raw.request(1, version, **consumer_fetch([topic], min_bytes=0, isolation_level=1))
    data = response.responses[0].partitions[0]
    assert data.error_code == 0
    aborted = [(a.producer_id, a.first_offset) for a in data.aborted_transactions or []]
    return len(data.records or b""), data.last_stable_offset, aborted


async def list_latest(raw: Any, isolation_level: int, version: int = 7) -> int:
    partition = raw.nested(2, version, "ListOffsetsPartition", partition_index=0, current_leader_epoch=-1, timestamp=-1)
    topic = raw.nested(2, version, "ListOffsetsTopic", name=TOPIC, partitions=[partition])
    response = await raw.request(2, version, replica_id=-1, isolation_level=isolation_level, topics=[topic])
    return int(response.topics[0].partitions[0].offset)


async def test_abort_is_reported_to_read_committed_fetch(raw: Any, broker: Broker) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await init(raw, "aborter")
    assert await add_partitions(raw, 3, "aborter", pid, epoch) == 0
    data = raw.nested(0, 9, "PartitionProduceData", index=0, records=txn_batch(pid, epoch, 0, b"x"))
    topic = raw.nested(0, 9, "TopicProduceData", name=TOPIC, partition_data=[data])
    await raw.request(0, 9, transactional_id="aborter", acks=-1, timeout=1000, topic_data=[topic])
    ended = await raw.request(26, 3, transactional_id="aborter", producer_id=pid, producer_epoch=epoch, committed=False)
    assert ended.error_code == 0
    size, lso, aborted = await fetch_committed(raw, 0)
    assert size > 0
    assert lso == 2
    assert aborted == [(pid, 0)]


@pytest.mark.parametrize("version", RANGES[ApiKey.ADD_OFFSETS_TO_TXN])
async def test_add_offsets_to_txn_refusals(raw: Any, version: int) -> None:
    response = await raw.request(25, version, transactional_id="nobody", producer_id=5, producer_epoch=0, group_id="g")
    assert response.error_code == 49  # INVALID_PRODUCER_ID_MAPPING


@pytest.mark.parametrize("version", RANGES[ApiKey.TXN_OFFSET_COMMIT])
async def test_txn_offset_commit_outside_a_transaction(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await init(raw, f"toc-{version}")
    part = raw.nested(
        28,
        version,
        "TxnOffsetCommitRequestPartition",
        partition_index=0,
        committed_offset=1,
        committed_leader_epoch=-1,
        committed_metadata=None,
    )
    topics = [
        raw.nested(28, version, "TxnOffsetCommitRequestTopic", name=TOPIC, partitions=[part]),
        raw.nested(28, version, "TxnOffsetCommitRequestTopic", name="no-such-topic", partitions=[part]),
    ]
    response = await raw.request(
        28,
        version,
        transactional_id=f"toc-{version}",
        group_id="g",
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=topics,
    )
    codes = [p.error_code for t in response.topics for p in t.partitions]
    if version >= 5:  # transaction version 2 (KIP-890 part 2): the commit adds `__consumer_offsets` itself
        assert codes == [0, 3]
        txn = broker.transactions.describe(f"toc-{version}")
        assert txn is not None
        assert txn.partitions == {("__consumer_offsets", 0)}
    else:
        assert codes == [48, 3]  # INVALID_TXN_STATE (offsets not added), UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("version", RANGES[ApiKey.DESCRIBE_TRANSACTIONS])
async def test_describe_transactions(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await init(raw, "described")
    assert await add_partitions(raw, 3, "described", pid, epoch) == 0
    response = await raw.request(65, version, transactional_ids=["described"])
    (known,) = response.transaction_states
    assert (known.error_code, known.transaction_state, known.producer_id, known.producer_epoch) == (
        0,
        "Ongoing",
        pid,
        epoch,
    )
    assert [(t.topic, list(t.partitions)) for t in known.topics] == [(TOPIC, [0])]
    assert known.transaction_timeout.total_seconds() == 60
    unknown = (await raw.request(65, version, transactional_ids=["unknown"])).transaction_states[0]
    assert (unknown.error_code, unknown.transaction_state, unknown.transaction_start_time.timestamp()) == (105, "", 0)


@pytest.mark.parametrize("version", RANGES[ApiKey.LIST_TRANSACTIONS])
async def test_list_transactions(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await init(raw, "listed-a")
    await init(raw, "other-b")
    assert await add_partitions(raw, 3, "listed-a", pid, epoch) == 0
    fields = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1, "transactional_id_pattern": None}
    everything = await raw.request(66, version, **fields)
    assert {s.transactional_id for s in everything.transaction_states} == {"listed-a", "other-b"}
    ongoing = await raw.request(66, version, **{**fields, "state_filters": ["Ongoing", "Bogus"]})
    assert [(s.transactional_id, s.transaction_state) for s in ongoing.transaction_states] == [("listed-a", "Ongoing")]
    assert list(ongoing.unknown_state_filters) == ["Bogus"]
    if version >= 2:
        matched = await raw.request(66, version, **{**fields, "transactional_id_pattern": "other-.*"})
        assert [s.transactional_id for s in matched.transaction_states] == ["other-b"]
        bad = await raw.request(66, version, **{**fields, "transactional_id_pattern": "(["})
        assert bad.error_code == 42


@pytest.mark.parametrize("version", RANGES[ApiKey.DESCRIBE_PRODUCERS])
async def test_describe_producers(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic(TOPIC)
    pid, epoch = await init(raw, "producer")
    assert await add_partitions(raw, 3, "producer", pid, epoch) == 0
    data = raw.nested(0, 9, "PartitionProduceData", index=0, records=txn_batch(pid, epoch, 0, b"x", b"y"))
    topic = raw.nested(0, 9, "TopicProduceData", name=TOPIC, partition_data=[data])
    await raw.request(0, 9, transactional_id="producer", acks=-1, timeout=1000, topic_data=[topic])
    request = [raw.nested(61, version, "TopicRequest", name=TOPIC, partition_indexes=[0, 7])]
    response = await raw.request(61, version, topics=request)
    ok, missing = response.topics[0].partitions
    (state,) = ok.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence, state.current_txn_start_offset) == (
        pid,
        epoch,
        1,
        0,
    )
    assert missing.error_code == 3


async def test_produce_refuses_transactional_batches_outside_the_transaction(raw: Any, broker: Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    pid, epoch = await init(raw, "strict")
    assert await add_partitions(raw, 3, "strict", pid, epoch) == 0
    data = raw.nested(0, 9, "PartitionProduceData", index=1, records=txn_batch(pid, epoch, 0, b"x"))
    topic = raw.nested(0, 9, "TopicProduceData", name=TOPIC, partition_data=[data])
    response = await raw.request(0, 9, transactional_id="strict", acks=-1, timeout=1000, topic_data=[topic])
    assert response.responses[0].partition_responses[0].error_code == 48  # partition 1 was never added
    data = raw.nested(0, 9, "PartitionProduceData", index=0, records=txn_batch(pid, epoch - 1, 0, b"x"))
    topic = raw.nested(0, 9, "TopicProduceData", name=TOPIC, partition_data=[data])
    response = await raw.request(0, 9, transactional_id="strict", acks=-1, timeout=1000, topic_data=[topic])
    assert response.responses[0].partition_responses[0].error_code == 47  # a stale epoch
    assert broker.partition(TOPIC, 0).high_watermark == broker.partition(TOPIC, 1).high_watermark == 0


# ---- transaction version 2 (KIP-890 part 2) and WriteTxnMarkers ----------------------------------------------------


async def produce(raw: Any, version: int, tid: str, batch: bytes, index: int = 0) -> int:
    data = raw.nested(0, version, "PartitionProduceData", index=index, records=batch)
    topic = raw.nested(0, version, "TopicProduceData", name=TOPIC, partition_data=[data])
    response = await raw.request(0, version, transactional_id=tid, acks=-1, timeout=1000, topic_data=[topic])
    return int(response.responses[0].partition_responses[0].error_code)


@pytest.mark.parametrize("version", [v for v in RANGES[ApiKey.API_VERSIONS] if v >= 3])
async def test_transaction_version_2_is_finalized(raw: Any, version: int) -> None:
    response = await raw.request(18, version, client_software_name="t", client_software_version="1")
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features}
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    assert finalized["transaction.version"] == (2, 2)
    assert supported["transaction.version"] == (0, 2)


@pytest.mark.parametrize("version", [v for v in RANGES[ApiKey.PRODUCE] if v >= 9])
async def test_produce_v12_adds_the_partition_to_the_transaction(raw: Any, broker: Broker, version: int) -> None:
    """v12+ adds the partition itself (a transaction version 2 client sends no AddPartitionsToTxn); v11 and older
    still refuse a partition never added (KIP-890 part 1)."""
    await broker.create_topic(TOPIC)
    tid = f"implicit-{version}"
    pid, epoch = await init(raw, tid)
    code = await produce(raw, version if version < 13 else 12, tid, txn_batch(pid, epoch, 0, b"a"))
    if version < 12:
        assert code == 48
        return
    assert code == 0
    txn = broker.transactions.describe(tid)
    assert txn is not None
    assert (txn.state.label, txn.partitions) == ("Ongoing", {(TOPIC, 0)})
    assert await list_latest(raw, isolation_level=1) == 0  # the open transaction holds the LSO
    # A stale epoch is not added: fenced as before.
    assert await produce(raw, 12, tid, txn_batch(pid, epoch - 1, 0, b"z")) == 47
    # EndTxn v5 commits, bumping the epoch; the next transaction starts with a Produce at the new epoch.
    ended = await raw.request(26, 5, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, pid, epoch + 1)
    assert await list_latest(raw, isolation_level=1) == 2
    # A late write of the old epoch is fenced by the partition too (the marker carried the new epoch).
    assert await produce(raw, 12, tid, txn_batch(pid, epoch, 1, b"late")) == 47
    assert await produce(raw, 12, tid, txn_batch(pid, epoch + 1, 0, b"b")) == 0
    txn = broker.transactions.describe(tid)
    assert txn is not None
    assert (txn.state.label, txn.producer_epoch) == ("Ongoing", epoch + 1)


async def test_end_txn_v5_abort_with_nothing_ongoing(raw: Any, broker: Broker) -> None:
    pid, epoch = await init(raw, "empty-abort")
    for version in (3, 4):
        ended = await raw.request(
            26, version, transactional_id="empty-abort", producer_id=pid, producer_epoch=epoch, committed=False
        )
        assert ended.error_code == 48  # INVALID_TXN_STATE: version 1 has nothing to abort
    ended = await raw.request(
        26, 5, transactional_id="empty-abort", producer_id=pid, producer_epoch=epoch, committed=False
    )
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, pid, epoch + 1)
    txn = broker.transactions.describe("empty-abort")
    assert txn is not None
    assert (txn.state.label, txn.producer_epoch) == ("CompleteAbort", epoch + 1)
    committed = await raw.request(
        26, 5, transactional_id="empty-abort", producer_id=pid, producer_epoch=epoch + 1, committed=True
    )
    assert committed.error_code == 48


async def test_txn_offset_commit_v5_without_add_offsets(raw: Any, broker: Broker) -> None:
    """A transaction version 2 consume-transform-produce step: Produce v12 and TxnOffsetCommit v5, no Add* call."""
    await broker.create_topic(TOPIC)
    pid, epoch = await init(raw, "ctp")
    assert await produce(raw, 12, "ctp", txn_batch(pid, epoch, 0, b"out")) == 0
    part = raw.nested(
        28,
        5,
        "TxnOffsetCommitRequestPartition",
        partition_index=0,
        committed_offset=7,
        committed_leader_epoch=-1,
        committed_metadata=None,
    )
    offsets = raw.nested(28, 5, "TxnOffsetCommitRequestTopic", name=TOPIC, partitions=[part])
    committed = await raw.request(
        28,
        5,
        transactional_id="ctp",
        group_id="g-ctp",
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=[offsets],
    )
    assert committed.topics[0].partitions[0].error_code == 0
    assert broker.offsets.fetch("g-ctp", TOPIC, 0) is None
    ended = await raw.request(26, 5, transactional_id="ctp", producer_id=pid, producer_epoch=epoch, committed=True)
    assert ended.error_code == 0
    stored = broker.offsets.fetch("g-ctp", TOPIC, 0)
    assert stored is not None
    assert stored.offset == 7


def marker(raw: Any, version: int, pid: int, epoch: int, commit: bool, parts: dict[str, list[int]], **kw: Any) -> Any:
    topics = [
        raw.nested(27, version, "WritableTxnMarkerTopic", name=name, partition_indexes=indexes)
        for name, indexes in parts.items()
    ]
    return raw.nested(
        27,
        version,
        "WritableTxnMarker",
        producer_id=pid,
        producer_epoch=epoch,
        transaction_result=commit,
        topics=topics,
        coordinator_epoch=kw.get("coordinator_epoch", 0),
        **({"transaction_version": kw.get("transaction_version", 0)} if version >= 2 else {}),
    )


@pytest.mark.parametrize("version", RANGES[ApiKey.WRITE_TXN_MARKERS])
async def test_write_txn_markers_aborts_a_hanging_transaction(raw: Any, broker: Broker, version: int) -> None:
    """What `kafka-transactions.sh abort` does: an abort marker for the producer DescribeProducers reports."""
    await broker.create_topic(TOPIC, partitions=2)
    tid = f"hanging-{version}"
    pid, epoch = await init(raw, tid)
    assert await add_partitions(raw, 3, tid, pid, epoch) == 0
    assert await produce(raw, 9, tid, txn_batch(pid, epoch, 0, b"x", b"y")) == 0
    assert await list_latest(raw, isolation_level=1) == 0
    request = [raw.nested(61, 0, "TopicRequest", name=TOPIC, partition_indexes=[0])]
    (state,) = (await raw.request(61, 0, topics=request)).topics[0].partitions[0].active_producers
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, 0)

    stale = marker(raw, version, pid, epoch - 1, False, {TOPIC: [0]})
    unknown = marker(raw, version, pid, epoch, False, {TOPIC: [7], "no-such-topic": [0]})
    good = marker(raw, version, pid, epoch, False, {TOPIC: [0]}, coordinator_epoch=0)
    response = await raw.request(27, version, markers=[stale, unknown, good])
    codes = [
        [(t.name, p.partition_index, p.error_code) for t in m.topics for p in t.partitions] for m in response.markers
    ]
    assert [m.producer_id for m in response.markers] == [pid, pid, pid]
    assert codes == [
        [(TOPIC, 0, 47)],  # INVALID_PRODUCER_EPOCH: older than the producer's
        [(TOPIC, 7, 3), ("no-such-topic", 0, 3)],  # UNKNOWN_TOPIC_OR_PARTITION
        [(TOPIC, 0, 0)],
    ]
    _, lso, aborted = await fetch_committed(raw, 0)
    assert (lso, aborted) == (3, [(pid, 0)])
    (state,) = (await raw.request(61, 0, topics=request)).topics[0].partitions[0].active_producers
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (0, -1)
    # A marker from an older coordinator is fenced.
    older = marker(raw, version, pid, epoch, False, {TOPIC: [0]}, coordinator_epoch=-1)
    response = await raw.request(27, version, markers=[older])
    assert response.markers[0].topics[0].partitions[0].error_code == 52  # TRANSACTION_COORDINATOR_FENCED
    if version >= 2:  # KIP-1228: a transaction version 2 marker must carry an epoch above the producer's
        same = marker(raw, version, pid, epoch, True, {TOPIC: [0]}, transaction_version=2)
        response = await raw.request(27, version, markers=[same])
        assert response.markers[0].topics[0].partitions[0].error_code == 47
        above = marker(raw, version, pid, epoch + 1, True, {TOPIC: [0]}, transaction_version=2)
        response = await raw.request(27, version, markers=[above])
        assert response.markers[0].topics[0].partitions[0].error_code == 0


@pytest.mark.parametrize("version", RANGES[ApiKey.WRITE_TXN_MARKERS])
async def test_write_txn_markers_empty_and_offsets(raw: Any, broker: Broker, version: int) -> None:
    assert (await raw.request(27, version, markers=[])).markers == ()
    await broker.create_topic(TOPIC)
    known, _ = await init(raw, f"known-{version}")
    for pid, epoch, code in ((-1, 0, 59), (2**62, 0, 59), (known, -5, 47)):  # ids never handed out, a bad epoch
        response = await raw.request(27, version, markers=[marker(raw, version, pid, epoch, False, {TOPIC: [0, -1]})])
        assert [p.error_code for p in response.markers[0].topics[0].partitions] == [code, 3]
    assert broker.partition(TOPIC, 0).high_watermark == 0
    # A marker on `__consumer_offsets` decides the producer's transactional offsets there.
    tid = f"offsets-{version}"
    pid, epoch = await init(raw, tid)
    added = await raw.request(25, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id="gm")
    assert added.error_code == 0
    part = raw.nested(
        28,
        3,
        "TxnOffsetCommitRequestPartition",
        partition_index=0,
        committed_offset=5,
        committed_leader_epoch=-1,
        committed_metadata=None,
    )
    offsets = raw.nested(28, 3, "TxnOffsetCommitRequestTopic", name=TOPIC, partitions=[part])
    await raw.request(
        28,
        3,
        transactional_id=tid,
        group_id="gm",
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        topics=[offsets],
    )
    commit = marker(raw, version, pid, epoch, True, {"__consumer_offsets": [0]})
    response = await raw.request(27, version, markers=[commit])
    assert response.markers[0].topics[0].partitions[0].error_code == 0
    stored = broker.offsets.fetch("gm", TOPIC, 0)
    assert stored is not None
    assert stored.offset == 5


_MARKER_NULL_TOPICS = b"\x02" + struct.pack(">qh", 1, 0) + b"\x00" + b"\x00" + struct.pack(">i", 0) + b"\x00" + b"\x00"


@pytest.mark.parametrize(
    ("version", "body"),
    [(1, b"\x00\x00"), (2, b"\x00\x00"), (1, _MARKER_NULL_TOPICS), (2, _MARKER_NULL_TOPICS[:-2] + b"\x00\x00\x00")],
    ids=["null-markers-v1", "null-markers-v2", "null-topics-v1", "null-topics-v2"],
)
async def test_write_txn_markers_null_arrays_close_only_that_connection(
    connect: Any, version: int, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    raw = await connect()
    frame = struct.pack(">hhih", 27, version, 1, 1) + b"t\x00" + body
    await raw.send_raw(struct.pack(">i", len(frame)) + frame)
    assert await raw.is_closed_by_server()
    assert any("null array in non-nullable field" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.exc_info is not None]
    other = await connect()
    assert (await other.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0
