"""Every served version of the admin APIs over raw bytes: each request decodes, each answer is Kafka's and decodes
with every byte consumed (the `raw` client checks that), for good input and bad."""

from __future__ import annotations

import logging
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.groups.consumer_protocol import Subscription, encode_subscription
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.protocol.wire import ApiKey
from kafkalite.server import KafkaServer, serve
from kafkalite.server.dispatch import supported_ranges

pytestmark = pytest.mark.timeout(60)

RANGES = {api_key: list(range(lo, hi + 1)) for api_key, lo, hi in supported_ranges()}
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
LOG_DIR_NOT_FOUND = 57
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
ELECTION_NOT_NEEDED = 84
INVALID_REPLICA_ASSIGNMENT = 39
NO_REASSIGNMENT_IN_PROGRESS = 85
GROUP_ID_NOT_FOUND = 69
INVALID_GROUP_ID = 24


def batch(*values: bytes) -> bytes:
    return build_batch([RecordToWrite(v) for v in values], now_ms=int(time.time() * 1000))


# ---- DescribeLogDirs / AlterReplicaLogDirs ------------------------------------------------------------------------


@pytest.mark.parametrize("version", RANGES[ApiKey.DESCRIBE_LOG_DIRS])
async def test_describe_log_dirs_in_memory(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("ld", 2)
    await broker.produce("ld", 1, batch(b"abc", b"def"), acks=1)
    topics = [raw.nested(35, version, "DescribableLogDirTopic", topic=t, partitions=[0, 1, 7]) for t in ("ld", "nope")]
    response = await raw.request(35, version, topics=topics)
    (result,) = response.results
    assert (result.error_code, result.log_dir) == (0, ":memory:")
    (topic,) = result.topics
    sizes = {p.partition_index: (p.partition_size, p.offset_lag, p.is_future_key) for p in topic.partitions}
    assert sizes == {0: (0, 0, False), 1: (broker.partition("ld", 1).log.size_bytes, 0, False)}
    assert sizes[1][0] > 0
    if version >= 4:
        assert (result.total_bytes, result.usable_bytes) == (-1, -1)
    everything = await raw.request(35, version, topics=None)
    assert {t.name for t in everything.results[0].topics} == {"ld", "__consumer_offsets"}
    assert {p.partition_index for t in everything.results[0].topics if t.name == "ld" for p in t.partitions} == {0, 1}


async def test_describe_log_dirs_on_disk_names_the_directory_and_its_volume(tmp_path: Path) -> None:
    async with Broker(tmp_path) as broker, serve(broker) as server:
        await broker.create_topic("disk", 1)
        await broker.produce("disk", 0, batch(b"x" * 1000), acks=-1)
        raw = await RawClient.connect(server)
        response = await raw.request(35, 4, topics=None)
        (result,) = response.results
        assert result.log_dir == str(tmp_path)  # pytest's tmp_path is already absolute and resolved
        assert result.total_bytes > 0
        assert 0 <= result.usable_bytes <= result.total_bytes
        disk = next(t for t in result.topics if t.name == "disk")
        on_disk = sum(f.stat().st_size for f in (tmp_path / "disk-0").glob("*.log"))
        assert disk.partitions[0].partition_size == on_disk > 1000
        here = [_move_topic(raw, 2, "disk", [0, 3]), _move_topic(raw, 2, "gone", [0])]
        dirs = [raw.nested(34, 2, "AlterReplicaLogDir", path=str(tmp_path), topics=here)]
        dirs.append(raw.nested(34, 2, "AlterReplicaLogDir", path="/else", topics=[_move_topic(raw, 2, "disk", [1])]))
        moved = await raw.request(34, 2, dirs=dirs)
        codes = {(t.topic_name, p.partition_index): p.error_code for t in moved.results for p in t.partitions}
        assert codes == {
            ("disk", 0): 0,
            ("disk", 3): UNKNOWN_TOPIC_OR_PARTITION,
            ("gone", 0): UNKNOWN_TOPIC_OR_PARTITION,
            ("disk", 1): LOG_DIR_NOT_FOUND,
        }
        await raw.close()


def _move_topic(raw: Any, version: int, name: str, partitions: list[int]) -> Any:
    return raw.nested(34, version, "AlterReplicaLogDirTopic", name=name, partitions=partitions)


@pytest.mark.parametrize("version", RANGES[ApiKey.ALTER_REPLICA_LOG_DIRS])
async def test_alter_replica_log_dirs_in_memory_has_no_directory(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("mv", 1)
    dirs = [raw.nested(34, version, "AlterReplicaLogDir", path="/tmp/x", topics=[_move_topic(raw, version, "mv", [0])])]
    response = await raw.request(34, version, dirs=dirs)
    assert [(t.topic_name, [p.error_code for p in t.partitions]) for t in response.results] == [
        ("mv", [LOG_DIR_NOT_FOUND])
    ]


# ---- DescribeTopicPartitions ----------------------------------------------------------------------------------------


def _cursor(raw: Any, topic: str, partition: int) -> Any:
    return raw.nested(75, 0, "Cursor", topic_name=topic, partition_index=partition)


async def _describe_partitions(raw: Any, names: list[str], limit: int, cursor: Any = None) -> Any:
    topics = [raw.nested(75, 0, "TopicRequest", name=n) for n in names]
    return await raw.request(75, 0, topics=topics, response_partition_limit=limit, cursor=cursor)


async def test_describe_topic_partitions_pages_with_its_cursor(raw: Any, broker: Broker) -> None:
    a, b = await broker.create_topic("dtp-a", 3), await broker.create_topic("dtp-b", 2)
    seen: list[tuple[str, int]] = []
    cursor = None
    pages = 0
    while True:
        response = await _describe_partitions(raw, ["dtp-b", "dtp-a", "dtp-none"], 2, cursor)
        pages += 1
        for topic in response.topics:
            if topic.name == "dtp-none":
                assert (topic.error_code, topic.topic_id, topic.partitions) == (
                    3,
                    None,
                    (),
                )  # kio reads the zero id as None
                continue
            assert topic.topic_id == {"dtp-a": a, "dtp-b": b}[topic.name].topic_id
            for p in topic.partitions:
                assert (p.leader_id, p.replica_nodes, p.isr_nodes, p.leader_epoch) == (0, (0,), (0,), -1)
                seen.append((topic.name, p.partition_index))
        if response.next_cursor is None:
            break
        cursor = _cursor(raw, response.next_cursor.topic_name, response.next_cursor.partition_index)
    assert seen == [("dtp-a", 0), ("dtp-a", 1), ("dtp-a", 2), ("dtp-b", 0), ("dtp-b", 1)]
    assert pages == 3


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 8, 100])
async def test_describe_topic_partitions_pages_cover_every_partition_once(raw: Any, broker: Broker, limit: int) -> None:
    counts = {"pg-a": 3, "pg-b": 1, "pg-c": 5}
    for name, count in counts.items():
        await broker.create_topic(name, count)
    everything = [(name, i) for name in sorted(counts) for i in range(counts[name])]
    for asked in (list(counts), []):
        seen: list[tuple[str, int]] = []
        cursor = None
        for _ in range(len(everything) + 2):
            response = await _describe_partitions(raw, asked, limit, cursor)
            page = [(t.name, p.partition_index) for t in response.topics for p in t.partitions]
            assert len(page) <= limit
            seen += [tp for tp in page if tp[0] in counts]
            if response.next_cursor is None:
                break
            cursor = _cursor(raw, response.next_cursor.topic_name, response.next_cursor.partition_index)
        assert seen == everything


async def test_describe_topic_partitions_of_every_topic_and_bad_cursors(raw: Any, broker: Broker) -> None:
    await broker.create_topic("every", 2)
    response = await _describe_partitions(raw, [], 2000)
    assert [t.name for t in response.topics] == ["__consumer_offsets", "every"]
    assert [t.is_internal for t in response.topics] == [True, False]
    assert response.next_cursor is None
    limited = await _describe_partitions(raw, [], 0)  # a limit below 1 still answers one partition
    assert [(t.name, len(t.partitions)) for t in limited.topics] == [("__consumer_offsets", 1)]
    assert (limited.next_cursor.topic_name, limited.next_cursor.partition_index) == ("every", 0)
    for bad in (_cursor(raw, "other", 0), _cursor(raw, "every", -1)):
        refused = await _describe_partitions(raw, ["every"], 10, bad)
        assert [(t.name, t.error_code, t.partitions) for t in refused.topics] == [("every", INVALID_REQUEST, ())]
    past_the_end = await _describe_partitions(raw, ["every"], 10, _cursor(raw, "every", 9))
    assert [(t.error_code, t.partitions) for t in past_the_end.topics] == [(0, ())]


# ---- ElectLeaders ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RANGES[ApiKey.ELECT_LEADERS])
async def test_elect_leaders(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("el", 2)
    wanted = [
        raw.nested(43, version, "TopicPartitions", topic="el", partitions=[0, 1, 5]),
        raw.nested(43, version, "TopicPartitions", topic="unknown", partitions=[0]),
    ]
    response = await raw.request(43, version, election_type=0, topic_partitions=wanted, timeout=1000)
    answers = {
        (r.topic, p.partition_id): (p.error_code, p.error_message)
        for r in response.replica_election_results
        for p in r.partition_result
    }
    assert answers == {
        ("el", 0): (ELECTION_NOT_NEEDED, None),
        ("el", 1): (ELECTION_NOT_NEEDED, None),
        ("el", 5): (UNKNOWN_TOPIC_OR_PARTITION, "No such partition as el-5"),
        ("unknown", 0): (UNKNOWN_TOPIC_OR_PARTITION, "No such topic as unknown"),
    }
    every = await raw.request(43, version, election_type=1, topic_partitions=None, timeout=1000)
    assert {r.topic: r.partition_result for r in every.replica_election_results} == {
        "__consumer_offsets": (),
        "el": (),
    }
    if version >= 1:
        assert every.error_code == 0
        bad = await raw.request(43, version, election_type=7, topic_partitions=wanted[:1], timeout=1000)
        assert bad.error_code == INVALID_REQUEST
        assert {p.error_code for p in bad.replica_election_results[0].partition_result} == {INVALID_REQUEST}


# ---- Alter/ListPartitionReassignments -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RANGES[ApiKey.ALTER_PARTITION_REASSIGNMENTS])
async def test_alter_partition_reassignments(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("re", 1)

    def partition(index: int, replicas: list[int] | None) -> Any:
        return raw.nested(45, version, "ReassignablePartition", partition_index=index, replicas=replicas)

    asked = [
        partition(0, [0]),
        partition(0, None),
        partition(0, []),
        partition(0, [0, 0]),
        partition(0, [0, 3]),
        partition(4, [0]),
    ]
    topics = [
        raw.nested(45, version, "ReassignableTopic", name="re", partitions=asked),
        raw.nested(45, version, "ReassignableTopic", name="missing", partitions=[partition(0, [0])]),
    ]
    response = await raw.request(45, version, timeout=1000, allow_replication_factor_change=True, topics=topics)
    assert (response.error_code, response.error_message) == (0, None)
    codes = [[p.error_code for p in t.partitions] for t in response.responses]
    assert codes == [
        [0, NO_REASSIGNMENT_IN_PROGRESS, INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICA_ASSIGNMENT,
         INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION],
        [UNKNOWN_TOPIC_OR_PARTITION],
    ]  # fmt: skip
    assert "broker 3" in response.responses[0].partitions[4].error_message


@pytest.mark.parametrize("version", RANGES[ApiKey.LIST_PARTITION_REASSIGNMENTS])
async def test_list_partition_reassignments_is_always_empty(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("lr", 1)
    topics = [raw.nested(46, version, "ListPartitionReassignmentsTopics", name=n, partition_indexes=[0]) for n in "ab"]
    for asked in (None, topics):
        response = await raw.request(46, version, timeout=1000, topics=asked)
        assert (response.error_code, response.error_message, response.topics) == (0, None, ())


# ---- DescribeQuorum -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RANGES[ApiKey.DESCRIBE_QUORUM])
async def test_describe_quorum_has_one_voter(raw: Any, broker: Broker, server: KafkaServer, version: int) -> None:
    def ask(topic: str, partitions: list[int]) -> Any:
        data = [raw.nested(55, version, "PartitionData", partition_index=p) for p in partitions]
        return [raw.nested(55, version, "TopicData", topic_name=topic, partitions=data)]

    before = broker.metadata_changes
    await broker.create_topic("q", 1)
    response = await raw.request(55, version, topics=ask("__cluster_metadata", [0]))
    assert response.error_code == 0
    (partition,) = response.topics[0].partitions
    assert (partition.leader_id, partition.leader_epoch, partition.high_watermark) == (0, 1, before + 1)
    assert [v.replica_id for v in partition.current_voters] == [0]
    assert partition.current_voters[0].log_end_offset == before + 1
    assert partition.observers == ()
    if version >= 2:
        assert [(n.node_id, n.listeners[0].port) for n in response.nodes] == [
            (0, raw.writer.get_extra_info("peername")[1])
        ]
    for wrong in (ask("__cluster_metadata", [1]), ask("other", [0]), ask("__cluster_metadata", [0, 0])):
        refused = await raw.request(55, version, topics=wrong)
        assert (refused.error_code, refused.topics) == (UNKNOWN_TOPIC_OR_PARTITION, ())


# ---- ListConfigResources --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RANGES[ApiKey.LIST_CONFIG_RESOURCES])
async def test_list_config_resources(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("cr", 1)
    response = await raw.request(74, version, resource_types=[])
    assert response.error_code == 0
    if version == 0:  # client-metrics resources only: none
        assert response.config_resources == ()
        return
    listed = [(r.resource_name, r.resource_type) for r in response.config_resources]
    assert listed == [("0", 8), ("0", 4), ("__consumer_offsets", 2), ("cr", 2)]
    topics_only = await raw.request(74, version, resource_types=[2])
    assert [r.resource_name for r in topics_only.config_resources] == ["__consumer_offsets", "cr"]
    none = await raw.request(74, version, resource_types=[16, 32])
    assert (none.error_code, none.config_resources) == (0, ())
    unsupported = await raw.request(74, version, resource_types=[2, 64])
    assert (unsupported.error_code, unsupported.config_resources) == (UNSUPPORTED_VERSION, ())


# ---- OffsetDelete ---------------------------------------------------------------------------------------------------


async def _offset_delete(raw: Any, group: str, topics: dict[str, list[int]]) -> Any:
    asked = [
        raw.nested(
            47, 0, "OffsetDeleteRequestTopic", name=name,
            partitions=[raw.nested(47, 0, "OffsetDeleteRequestPartition", partition_index=p) for p in parts],
        )
        for name, parts in topics.items()
    ]  # fmt: skip
    return await raw.request(47, 0, group_id=group, topics=asked)


async def test_offset_delete_of_an_empty_group(raw: Any, broker: Broker) -> None:
    await broker.create_topic("od", 2)
    await broker.groups.offsets.commit_many("g-od", [("od", 0, 5, "", -1), ("od", 1, 7, "", -1)])
    response = await _offset_delete(raw, "g-od", {"od": [0, 9], "nope": [0]})
    assert response.error_code == 0
    codes = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
    assert codes == {("od", 0): 0, ("od", 9): UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION}
    assert set(broker.groups.offsets.committed("g-od")) == {("od", 1)}
    unknown = await _offset_delete(raw, "no-such-group", {"od": [0], "nope": [1]})
    assert unknown.error_code == GROUP_ID_NOT_FOUND
    assert [(t.name, [p.error_code for p in t.partitions]) for t in unknown.topics] == [
        ("nope", [UNKNOWN_TOPIC_OR_PARTITION])
    ]
    empty_id = await _offset_delete(raw, "", {"od": [0]})
    assert (empty_id.error_code, empty_id.topics) == (INVALID_GROUP_ID, ())


async def test_offset_delete_of_a_group_with_members(raw: Any, broker: Broker) -> None:
    """Members of a non-"consumer" group: NON_EMPTY_GROUP. A consumer group keeps what it subscribes to."""
    await broker.create_topic("odm", 1)
    await broker.create_topic("odm-free", 1)

    async def join(group: str, protocol_type: str, metadata: bytes) -> None:
        protocol = raw.nested(11, 3, "JoinGroupRequestProtocol", name="range", metadata=metadata)
        response = await raw.request(
            11, 3, group_id=group, session_timeout=30000, rebalance_timeout=30000, member_id="",
            protocol_type=protocol_type, protocols=[protocol],
        )  # fmt: skip
        assert response.error_code == 0
        await broker.groups.offsets.commit_many(group, [("odm", 0, 1, "", -1), ("odm-free", 0, 1, "", -1)])

    await join("connectors", "connect", b"anything")
    refused = await _offset_delete(raw, "connectors", {"odm": [0]})
    assert (refused.error_code, refused.topics) == (68, ())  # NON_EMPTY_GROUP
    await join("readers", "consumer", encode_subscription(Subscription(("odm",))))
    answer = await _offset_delete(raw, "readers", {"odm": [0], "odm-free": [0]})
    codes = {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}
    assert (answer.error_code, codes) == (0, {("odm", 0): 86, ("odm-free", 0): 0})  # GROUP_SUBSCRIBED_TO_TOPIC
    assert set(broker.groups.offsets.committed("readers")) == {("odm", 0)}


# ---- OffsetForLeaderEpoch -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RANGES[ApiKey.OFFSET_FOR_LEADER_EPOCH])
async def test_offset_for_leader_epoch(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("ep", 1)
    await broker.produce("ep", 0, batch(b"1", b"2", b"3"), acks=1)

    def partition(index: int, current: int, epoch: int) -> Any:
        return raw.nested(
            23, version, "OffsetForLeaderPartition", partition=index, current_leader_epoch=current, leader_epoch=epoch
        )

    asked = [partition(0, -1, 0), partition(0, 0, 0), partition(0, -1, 3), partition(0, 1, 0), partition(0, -5, 0)]
    asked.append(partition(2, -1, 0))
    topics = [
        raw.nested(23, version, "OffsetForLeaderTopic", topic="ep", partitions=asked),
        raw.nested(23, version, "OffsetForLeaderTopic", topic="nope", partitions=[partition(0, -1, 0)]),
    ]
    response = await raw.request(23, version, replica_id=-1, topics=topics)
    answers = [[(p.error_code, p.leader_epoch, p.end_offset) for p in t.partitions] for t in response.topics]
    assert answers == [
        [(0, 0, 3), (0, 0, 3), (0, -1, -1), (UNKNOWN_LEADER_EPOCH, -1, -1), (FENCED_LEADER_EPOCH, -1, -1),
         (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)],
        [(UNKNOWN_TOPIC_OR_PARTITION, -1, -1)],
    ]  # fmt: skip


# ---- ApiVersions' features (DescribeFeatures) -----------------------------------------------------------------------


@pytest.mark.parametrize("version", RANGES[ApiKey.API_VERSIONS])
async def test_api_versions_finalized_features(raw: Any, version: int) -> None:
    response = await raw.request(18, version, client_software_name="t", client_software_version="1")
    assert response.error_code == 0
    if version < 3:
        return
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features}
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    assert finalized["metadata.version"] == supported["metadata.version"] == (25, 25)
    assert response.finalized_features_epoch == 0
    served = {k.api_key for k in response.api_keys}
    assert ("group.version" in finalized) == (68 in served)


# ---- arrays the schema does not allow to be null --------------------------------------------------------------------

_TIMEOUT = struct.pack(">i", 1000)
NULL_ARRAY_BODIES = {
    # (api_key, version): a body with a null (0) compact array where the schema allows none
    (34, 2): b"\x00\x00",
    (75, 0): b"\x00" + struct.pack(">i", 10) + b"\xff\x00",
    (43, 2): b"\x00\x02\x02a\x00\x00" + _TIMEOUT + b"\x00",  # [topic "a", partitions null]
    (45, 1): _TIMEOUT + b"\x01\x00\x00",
    (55, 2): b"\x00\x00",
    (74, 1): b"\x00\x00",
    (23, 4): struct.pack(">i", -1) + b"\x00\x00",
    (32, 4): b"\x00\x00\x00\x00",
    (44, 1): b"\x00\x00\x00",
    (35, 2): b"\x02\x02a\x00\x00\x00",  # [topic "a", partitions null]
}


@pytest.mark.parametrize(("api_key", "version"), list(NULL_ARRAY_BODIES))
async def test_a_null_required_array_closes_only_that_connection(
    connect: Any, api_key: int, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    """As Kafka's parser refuses "non-nullable field was serialized as null": the connection closes with one log line
    (no traceback) and the broker serves everyone else."""
    raw = await connect()
    frame = struct.pack(">hhih", api_key, version, 1, 1) + b"t\x00" + NULL_ARRAY_BODIES[(api_key, version)]
    await raw.send_raw(struct.pack(">i", len(frame)) + frame)
    assert await raw.is_closed_by_server()
    assert any("null array in non-nullable field" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.exc_info is not None]
    other = await connect()
    assert (await other.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0


# ---- DescribeConfigs, CreateTopics and IncrementalAlterConfigs through the config table ------------------------------

INVALID_CONFIG = 40


def _resource(raw: Any, version: int, kind: int, name: str, keys: list[str] | None = None) -> Any:
    return raw.nested(
        32, version, "DescribeConfigsResource", resource_type=kind, resource_name=name, configuration_keys=keys
    )


@pytest.mark.parametrize("version", RANGES[ApiKey.DESCRIBE_CONFIGS])
async def test_describe_configs_types_sources_synonyms(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("dct", 1, {"retention.ms": "1000", "cleanup.policy": "compact,delete"})
    resources = [_resource(raw, version, 2, "dct", ["retention.ms", "cleanup.policy", "segment.ms", "nope"])]
    response = await raw.request(32, version, resources=resources, include_synonyms=True, include_documentation=True)
    configs = {c.name: c for c in response.results[0].configs}
    assert set(configs) == {"retention.ms", "cleanup.policy", "segment.ms"}
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == ("1000", 1, False)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "1000", 1),
        ("log.retention.ms", "604800000", 5),
    ]
    assert (configs["segment.ms"].config_source, configs["cleanup.policy"].value) == (5, "compact,delete")
    if version >= 3:
        assert (retention.config_type, configs["cleanup.policy"].config_type) == (5, 7)  # LONG, LIST
        assert "deleted" in retention.documentation
    plain = await raw.request(32, version, resources=resources, include_synonyms=False, include_documentation=False)
    assert all(c.synonyms == () for c in plain.results[0].configs)


@pytest.mark.parametrize("version", RANGES[ApiKey.DESCRIBE_CONFIGS])
async def test_describe_configs_of_the_broker(raw: Any, server: KafkaServer, version: int) -> None:
    resources = [
        _resource(raw, version, 4, "0"),
        _resource(raw, version, 4, ""),
        _resource(raw, version, 4, "7"),
        _resource(raw, version, 4, "--5"),
        _resource(raw, version, 2, "no-such-topic"),
        _resource(raw, version, 8, "0"),
    ]
    response = await raw.request(32, version, resources=resources, include_synonyms=False, include_documentation=False)
    ours, defaults, other, word, topic, loggers = response.results
    configs = {c.name: c for c in ours.configs}
    assert configs["advertised.listeners"].value == f"PLAINTEXT://{server.bootstrap}"
    assert configs["listeners"].value == f"PLAINTEXT://127.0.0.1:{server.port}"
    assert (configs["listeners"].config_source, configs["listeners"].read_only) == (4, True)
    assert (configs["node.id"].value, configs["log.dirs"].value, configs["num.partitions"].value) == ("0", None, "1")
    assert configs["log.retention.ms"].value == "604800000"
    if version >= 3:
        assert (configs["node.id"].config_type, configs["auto.create.topics.enable"].config_type) == (3, 1)
    assert (defaults.error_code, defaults.configs) == (0, ())
    assert [(r.error_code, r.configs) for r in (other, word)] == [(INVALID_REQUEST, ())] * 2
    assert other.error_message == "Unexpected broker id, expected 0 or empty string, but received 7"
    assert topic.error_code == UNKNOWN_TOPIC_OR_PARTITION
    levels = {c.name: (c.value, c.config_source) for c in loggers.configs}
    assert levels["root"][1] == 6  # DYNAMIC_BROKER_LOGGER_CONFIG
    assert "kafkalite.server" in levels
    assert levels["kafkalite.server"][0] in {"DEBUG", "INFO", "WARN", "ERROR", "FATAL"}


async def test_the_broker_loggers_levels_are_altered_by_kafkas_rules(raw: Any) -> None:
    async def alter(name: str, *ops: tuple[str, int, str | None]) -> tuple[int, str | None]:
        configs = [raw.nested(44, 1, "AlterableConfig", name=n, config_operation=op, value=v) for n, op, v in ops]
        resources = [raw.nested(44, 1, "AlterConfigsResource", resource_type=8, resource_name=name, configs=configs)]
        response = await raw.request(44, 1, resources=resources, validate_only=False)
        return response.responses[0].error_code, response.responses[0].error_message

    server_logger = logging.getLogger("kafkalite.server")
    before = server_logger.level
    try:
        assert await alter("0", ("kafkalite.server", 0, "debug")) == (0, None)
        assert server_logger.level == logging.DEBUG
        assert await alter("0", ("kafkalite.server", 1, None)) == (0, None)
        assert server_logger.level == logging.NOTSET
        assert (await alter("0", ("kafkalite.server", 0, "LOUD")))[0] == INVALID_CONFIG
        assert await alter("0", ("no.such.logger", 0, "INFO")) == (
            INVALID_CONFIG,
            "Logger no.such.logger does not exist!",
        )
        assert (await alter("0", ("root", 1, None)))[0] == INVALID_REQUEST
        assert (await alter("0", ("kafkalite.server", 2, "INFO")))[0] == INVALID_REQUEST
        assert await alter("", ("kafkalite.server", 0, "INFO")) == (INVALID_REQUEST, "Broker id must not be empty")
        assert server_logger.level == logging.NOTSET  # nothing refused was applied
    finally:
        server_logger.setLevel(before)
    broker_change = [raw.nested(44, 1, "AlterableConfig", name="num.partitions", config_operation=0, value="3")]
    resources = [raw.nested(44, 1, "AlterConfigsResource", resource_type=4, resource_name="0", configs=broker_change)]
    refused = (await raw.request(44, 1, resources=resources, validate_only=False)).responses[0]
    assert refused.error_code == INVALID_REQUEST
    assert refused.error_message.startswith("Cannot update these configs dynamically: num.partitions")


@pytest.mark.parametrize("codec", ["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"])
async def test_create_topics_accepts_every_kafka_codec(raw: Any, broker: Broker, codec: str) -> None:
    config = raw.nested(19, 7, "CreatableTopicConfig", name="compression.type", value=codec)
    topic = raw.nested(
        19, 7, "CreatableTopic", name=f"c-{codec}", num_partitions=1, replication_factor=1, assignments=[],
        configs=[config],
    )  # fmt: skip
    response = await raw.request(19, 7, topics=[topic], timeout=1000, validate_only=False)
    assert [t.error_code for t in response.topics] == [0]
    assert broker.topic(f"c-{codec}").config.get("compression.type") == codec


async def test_create_topics_refuses_a_bad_value_naming_key_and_rule(
    raw: Any, broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    config = raw.nested(19, 7, "CreatableTopicConfig", name="cleanup.policy", value="compact,shred")
    topic = raw.nested(
        19, 7, "CreatableTopic", name="bad", num_partitions=1, replication_factor=1, assignments=[], configs=[config]
    )
    response = await raw.request(19, 7, topics=[topic], timeout=1000, validate_only=False)
    (answer,) = response.topics
    assert answer.error_code == INVALID_CONFIG
    assert answer.error_message == "Invalid value compact,shred for configuration cleanup.policy: " + (
        "Invalid value shred; items must be among: compact, delete"
    )
    assert "bad" not in broker.topics
    assert any("Refused to create topic=bad" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("version", RANGES[ApiKey.INCREMENTAL_ALTER_CONFIGS])
async def test_incremental_alter_configs_appends_and_subtracts_list_configs(
    raw: Any, broker: Broker, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    await broker.create_topic("lists", 1)

    async def alter(*ops: tuple[str, int, str | None]) -> tuple[int, str | None]:
        configs = [
            raw.nested(44, version, "AlterableConfig", name=name, config_operation=op, value=value)
            for name, op, value in ops
        ]
        resources = [
            raw.nested(44, version, "AlterConfigsResource", resource_type=2, resource_name="lists", configs=configs)
        ]
        response = await raw.request(44, version, resources=resources, validate_only=False)
        return response.responses[0].error_code, response.responses[0].error_message

    assert await alter(("cleanup.policy", 2, "compact")) == (0, None)
    assert broker.topic("lists").config.get("cleanup.policy") == "delete,compact"
    assert await alter(("cleanup.policy", 3, "delete")) == (0, None)
    assert broker.topic("lists").config.get("cleanup.policy") == "compact"
    code, message = await alter(("retention.ms", 2, "5"))
    assert (code, message) == (INVALID_CONFIG, "Config value append is not allowed for config key: retention.ms")
    assert any("Refused to alter configs of topic=lists" in r.getMessage() for r in caplog.records)
    code, message = await alter(("retention.ms", 0, "5"), ("retention.ms", 1, None))
    assert code == INVALID_REQUEST
    code, message = await alter(("cleanup.policy", 2, "shred"))
    assert code == INVALID_CONFIG
    assert message is not None
    assert "cleanup.policy" in message
    assert broker.topic("lists").config.get("cleanup.policy") == "compact"
    assert await alter(("cleanup.policy", 3, "compact")) == (0, None)  # neither: Kafka's list allows it empty
    assert broker.topic("lists").config.get("cleanup.policy") == ""
