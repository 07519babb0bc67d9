"""Every served version of every API, over raw bytes: each request decodes, each response is complete and decodes.

kio gives every (API, version) its own classes; a handler that forgets a field some version requires fails here
rather than in front of a client that happens to ask for that version.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import supported_ranges

pytestmark = pytest.mark.timeout(60)

RANGES = {api_key: range(lo, hi + 1) for api_key, lo, hi in supported_ranges()}


def versions(api_key: int) -> list[int]:
    return list(RANGES[api_key])


def batch(*values: bytes) -> bytes:
    return build_batch([RecordToWrite(v) for v in values], now_ms=int(time.time() * 1000))


def topic_ref(raw: Any, api_key: int, version: int, cls: str, name: str, topic_id: uuid.UUID, **fields: Any) -> Any:
    """A request topic entry naming the topic both ways; the version keeps whichever field it has."""
    return raw.nested(api_key, version, cls, name=name, topic=name, topic_id=topic_id, **fields)


NO_AUTHORIZED_OPERATIONS = {
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
}


@pytest.mark.parametrize("version", versions(ApiKey.METADATA))
async def test_metadata(raw: Any, broker: Broker, version: int) -> None:
    name = f"meta-{version}"
    topics = [raw.nested(3, version, "MetadataRequestTopic", name=name, topic_id=None)]
    response = await raw.request(3, version, topics=topics, allow_auto_topic_creation=True, **NO_AUTHORIZED_OPERATIONS)
    assert [t.error_code for t in response.topics] == [0]
    assert [p.partition_index for p in response.topics[0].partitions] == [0]
    assert response.brokers[0].node_id == broker.node_id
    everything = await raw.request(
        3, version, topics=[] if version == 0 else None, allow_auto_topic_creation=False, **NO_AUTHORIZED_OPERATIONS
    )
    assert name in {t.name for t in everything.topics}


@pytest.mark.parametrize("version", versions(ApiKey.PRODUCE))
async def test_produce_then_fetch_and_list_offsets(raw: Any, broker: Broker, version: int) -> None:
    topic = await broker.create_topic("pf", 1)
    for acks in (1, -1):
        partition = raw.nested(0, version, "PartitionProduceData", index=0, records=batch(b"a", b"b"))
        data = [topic_ref(raw, 0, version, "TopicProduceData", "pf", topic.topic_id, partition_data=[partition])]
        response = await raw.request(0, version, transactional_id=None, acks=acks, timeout=1000, topic_data=data)
        assert [p.error_code for p in response.responses[0].partition_responses] == [0]
    assert broker.partition("pf", 0).high_watermark == 4


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
async def test_fetch(raw: Any, broker: Broker, version: int) -> None:
    topic = await broker.create_topic("f", 2)
    await broker.produce("f", 0, batch(b"x", b"y"), acks=1)
    partitions = [
        raw.nested(
            1,
            version,
            "FetchPartition",
            partition=p,
            fetch_offset=0,
            partition_max_bytes=1 << 20,
            current_leader_epoch=-1,
            last_fetched_epoch=-1,
            log_start_offset=-1,
            replica_directory_id=None,
            high_watermark=-1,
        )
        for p in (0, 1)
    ]
    request = {
        "cluster_id": None,
        "replica_id": -1,
        "replica_state": raw.nested(1, version, "ReplicaState", replica_id=-1, replica_epoch=-1),
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [topic_ref(raw, 1, version, "FetchTopic", "f", topic.topic_id, partitions=partitions)],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    response = await raw.request(1, version, **request)
    p0, p1 = response.responses[0].partitions
    assert (p0.error_code, p0.high_watermark, p1.error_code, p1.high_watermark) == (0, 2, 0, 0)
    assert len(p0.records) > 0
    assert p1.records == b""  # empty, not null


@pytest.mark.parametrize("version", versions(ApiKey.LIST_OFFSETS))
async def test_list_offsets(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("lo", 1)
    await broker.produce("lo", 0, batch(b"1", b"2", b"3"), acks=1)
    partitions = [
        raw.nested(
            2,
            version,
            "ListOffsetsPartition",
            partition_index=0,
            current_leader_epoch=-1,
            timestamp=-1,
            max_num_offsets=1,
        )
    ]
    topics = [raw.nested(2, version, "ListOffsetsTopic", name="lo", partitions=partitions)]
    response = await raw.request(2, version, replica_id=-1, isolation_level=0, topics=topics, timeout=1000)
    assert (response.topics[0].partitions[0].error_code, response.topics[0].partitions[0].offset) == (0, 3)


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_TOPICS))
async def test_create_topics(raw: Any, broker: Broker, version: int) -> None:
    config = raw.nested(19, version, "CreatableTopicConfig", name="retention.ms", value="1000")
    topic = raw.nested(
        19,
        version,
        "CreatableTopic",
        name="ct",
        num_partitions=3,
        replication_factor=1,
        assignments=[],
        configs=[config],
    )
    response = await raw.request(19, version, topics=[topic], timeout=1000, validate_only=False)
    assert [t.error_code for t in response.topics] == [0]
    assert len(broker.topic("ct").partitions) == 3
    again = await raw.request(19, version, topics=[topic], timeout=1000, validate_only=False)
    assert [t.error_code for t in again.topics] == [36]  # TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_TOPICS))
async def test_delete_topics(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("dt", 1)
    topics = [raw.nested(20, version, "DeleteTopicState", name="dt", topic_id=None)]
    response = await raw.request(20, version, topic_names=["dt"], topics=topics, timeout=1000)
    assert [r.error_code for r in response.responses] == [0]
    assert "dt" not in broker.topics


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_PARTITIONS))
async def test_create_partitions(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("cp", 1)
    topics = [raw.nested(37, version, "CreatePartitionsTopic", name="cp", count=3, assignments=None)]
    response = await raw.request(37, version, topics=topics, timeout=1000, validate_only=False)
    assert [r.error_code for r in response.results] == [0]
    assert len(broker.topic("cp").partitions) == 3


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CONFIGS))
async def test_describe_configs(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("dc", 1, {"retention.ms": "1000"})
    resources = [
        raw.nested(32, version, "DescribeConfigsResource", resource_type=2, resource_name="dc", configuration_keys=None)
    ]
    response = await raw.request(32, version, resources=resources, include_synonyms=True, include_documentation=True)
    configs = {c.name: c for c in response.results[0].configs}
    assert configs["retention.ms"].value == "1000"


@pytest.mark.parametrize("version", versions(ApiKey.INCREMENTAL_ALTER_CONFIGS))
async def test_incremental_alter_configs(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("iac", 1)
    configs = [raw.nested(44, version, "AlterableConfig", name="retention.ms", config_operation=0, value="5000")]
    resources = [raw.nested(44, version, "AlterConfigsResource", resource_type=2, resource_name="iac", configs=configs)]
    response = await raw.request(44, version, resources=resources, validate_only=False)
    assert [r.error_code for r in response.responses] == [0]
    assert broker.topic("iac").config.get("retention.ms") == "5000"


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_CONFIGS))
async def test_alter_configs_replaces_the_overrides(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("ac", 1, {"retention.ms": "1000"})
    configs = [raw.nested(33, version, "AlterableConfig", name="segment.ms", value="60000")]
    resources = [raw.nested(33, version, "AlterConfigsResource", resource_type=2, resource_name="ac", configs=configs)]
    response = await raw.request(33, version, resources=resources, validate_only=False)
    assert [r.error_code for r in response.responses] == [0]
    assert broker.topic("ac").config.overrides() == {"segment.ms": "60000"}


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_RECORDS))
async def test_delete_records(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("dr", 1)
    await broker.produce("dr", 0, batch(b"1"), acks=1)
    await broker.produce("dr", 0, batch(b"2"), acks=1)
    partitions = [raw.nested(21, version, "DeleteRecordsPartition", partition_index=0, offset=1)]
    topics = [raw.nested(21, version, "DeleteRecordsTopic", name="dr", partitions=partitions)]
    response = await raw.request(21, version, topics=topics, timeout=1000)
    assert (response.topics[0].partitions[0].error_code, response.topics[0].partitions[0].low_watermark) == (0, 1)


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CLUSTER))
async def test_describe_cluster(raw: Any, broker: Broker, version: int) -> None:
    response = await raw.request(
        60, version, include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=False
    )
    assert response.error_code == 0
    assert response.cluster_id == broker.cluster_id
    assert [b.broker_id for b in response.brokers] == [broker.node_id]


@pytest.mark.parametrize("version", versions(ApiKey.INIT_PRODUCER_ID))
async def test_init_producer_id(raw: Any, version: int) -> None:
    request = {
        "transactional_id": None,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
        "enable2_pc": False,
        "keep_prepared_txn": False,
    }
    response = await raw.request(22, version, **request)
    assert response.error_code == 0
    assert response.producer_id >= 0
