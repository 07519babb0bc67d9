"""`/metrics` scraped while real clients produce and consume: the numbers match what was sent, and the exposition
parses with prometheus-client's own parser."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from kafkalite.server import ThreadedServer

from .conftest import Browser, manual_consumer

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(browser: Browser) -> Samples:
    answer = browser.get("/metrics")
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.body):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, tuple(sorted(labels.items()))]


def test_counts_bytes_lag_and_errors_match_what_real_clients_did(served: ThreadedServer, browser: Browser) -> None:
    served.call(served.broker.create_topic("metered", 2))
    producer = Producer({"bootstrap.servers": served.bootstrap, "linger.ms": 5, "acks": "all"})
    values = [f"value-{i:04d}".encode() * (1 + i % 7) for i in range(300)]
    for i, payload in enumerate(values):
        producer.produce("metered", payload, key=b"k%d" % i, partition=i % 2)
    assert producer.flush(30) == 0

    before = scrape(browser)
    assert value(before, "kafka_server_brokertopicmetrics_messagesin_total", topic="metered") == 300
    sizes = [value(before, "kafka_log_log_size", topic="metered", partition=str(p)) for p in (0, 1)]
    # the bytes counted in are exactly the record batches stored (opaque bytes, socket to disk)
    assert value(before, "kafka_server_brokertopicmetrics_bytesin_total", topic="metered") == sum(sizes)
    assert value(before, "kafka_log_log_logendoffset", topic="metered", partition="0") == 150
    assert value(before, "kafka_log_log_logendoffset", topic="metered", partition="1") == 150
    assert value(before, "kafka_log_log_logstartoffset", topic="metered", partition="0") == 0
    assert value(before, "kafka_topic_partitions", topic="metered") == 2
    assert value(before, "kafka_network_requestmetrics_requests_total", request="Produce") >= 2
    assert value(before, "kafka_network_requestmetrics_requests_total", request="Metadata") >= 1
    assert value(before, "kafka_server_socketservermetrics_connection_count") >= 1
    assert value(before, "kafkalite_request_latency_seconds_count", request="Produce") == value(
        before, "kafka_network_requestmetrics_requests_total", request="Produce"
    )
    # acks=all on an fsyncing broker: every produce waited for a group-commit round
    assert value(before, "kafkalite_log_flush_seconds_count") >= 1
    assert value(before, "kafkalite_log_flush_batch_appends_sum") >= 2

    consumer = manual_consumer(served.bootstrap, "metered-readers")
    try:
        consumer.subscribe(["metered"])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 300 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen += 1
        assert seen == 300
        consumer.commit(
            offsets=[TopicPartition("metered", 0, 100), TopicPartition("metered", 1, 150)], asynchronous=False
        )
        during = scrape(browser)
        assert (
            value(
                during,
                "kafka_consumergroup_current_offset",
                consumergroup="metered-readers",
                topic="metered",
                partition="0",
            )
            == 100
        )
        assert (
            value(during, "kafka_consumergroup_lag", consumergroup="metered-readers", topic="metered", partition="0")
            == 50
        )
        assert (
            value(during, "kafka_consumergroup_lag", consumergroup="metered-readers", topic="metered", partition="1")
            == 0
        )
        assert value(during, "kafka_consumergroup_lag_sum", consumergroup="metered-readers", topic="metered") == 50
        assert value(during, "kafka_consumergroup_members", consumergroup="metered-readers") == 1
        assert value(during, "kafkalite_consumergroup_state", consumergroup="metered-readers", state="Stable") == 1
        assert value(during, "kafkalite_consumergroup_rebalances_total", consumergroup="metered-readers") >= 1
        # everything stored was fetched at least once
        assert value(during, "kafka_server_brokertopicmetrics_bytesout_total", topic="metered") >= sum(sizes)
        assert value(during, "kafka_network_requestmetrics_requests_total", request="JoinGroup") >= 1
    finally:
        consumer.close()
    after = scrape(browser)
    assert value(after, "kafkalite_consumergroup_state", consumergroup="metered-readers", state="Empty") == 1


def test_error_codes_are_counted_per_api_and_name(served: ThreadedServer, browser: Browser) -> None:
    admin = AdminClient({"bootstrap.servers": served.bootstrap})
    for _ in range(2):  # the second create of each name is refused: TOPIC_ALREADY_EXISTS in the answer
        futures = admin.create_topics([NewTopic("twice-a", 1), NewTopic("twice-b", 1)], operation_timeout=10)
        for future in futures.values():
            try:
                future.result(30)
            except KafkaException:
                pass
    samples = scrape(browser)
    assert (
        value(
            samples, "kafka_network_requestmetrics_errors_total", request="CreateTopics", error="TOPIC_ALREADY_EXISTS"
        )
        == 2
    )
    assert value(samples, "kafka_network_requestmetrics_requests_total", request="CreateTopics") == 2


def test_dead_letters_and_retention_and_process_metrics_are_exposed(served: ThreadedServer, browser: Browser) -> None:
    broker = served.broker
    served.call(broker.create_topic("letters", 2))
    for partition in (0, 1, 1):
        served.call(broker.dead_letters.send("letters", partition, b"k", b"v", [], ValueError("bad"), offset=3))
    served.call(broker.dead_letters.replay("letters"))
    served.call(broker.dead_letters.send("letters", 0, b"k", b"v", [], ValueError("worse"), offset=4))
    samples = scrape(browser)
    assert value(samples, "kafkalite_dead_letters", topic="letters") == 4
    assert value(samples, "kafkalite_dead_letters_pending_replay", topic="letters") == 1
    assert ("kafka_consumergroup_lag", (("consumergroup", "__kafkalite-dlq-replay"),)) not in samples
    assert value(samples, "kafkalite_retention_passes_total") >= 0
    assert value(samples, "kafkalite_broker_info", cluster_id=broker.cluster_id, node="0") == 1
    assert any(name == "process_resident_memory_bytes" for name, _ in samples)


def test_producer_states_are_counted_and_their_expiration_too(served: ThreadedServer, browser: Browser) -> None:
    served.call(served.broker.create_topic("idempotent-metrics", 2))
    producer = Producer({"bootstrap.servers": served.bootstrap, "enable.idempotence": True})
    for partition in (0, 1):
        producer.produce("idempotent-metrics", b"v", partition=partition)
    assert producer.flush(30) == 0
    before = scrape(browser)
    assert value(before, "kafkalite_producer_ids") >= 2  # one producer, two partitions

    async def expire_all() -> int:
        return served.broker.expire_producers(now_ms=int(time.time() * 1000) + 2 * 86_400_000)

    forgotten = served.call(expire_all())
    after = scrape(browser)
    assert forgotten >= 2
    assert value(after, "kafkalite_producer_ids") == 0
    assert (
        value(after, "kafkalite_producer_ids_expired_total") - value(before, "kafkalite_producer_ids_expired_total")
        == forgotten
    )
    assert value(after, "kafkalite_producer_expiration_failures_total") == 0


def test_every_metric_the_grafana_dashboard_queries_is_exported(served: ThreadedServer, browser: Browser) -> None:
    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana-dashboard.json").read_text())
    queried = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            queried |= set(re.findall(r"\b((?:kafka|kafkalite|process)_[a-z_]+)", target["expr"]))
    for variable in dashboard["templating"]["list"]:
        queried |= set(re.findall(r"\b((?:kafka|kafkalite|process)_[a-z_]+)", variable["definition"]))
    served.call(served.broker.create_topic("dashboarded", 1))
    served.call(served.broker.dead_letters.send("dashboarded", 0, None, b"v", [], ValueError("x")))
    refused = AdminClient({"bootstrap.servers": served.bootstrap}).create_topics([NewTopic("dashboarded", 1)])
    with pytest.raises(KafkaException):
        refused["dashboarded"].result(30)  # an error in an answer
    consumer = Consumer(
        {"bootstrap.servers": served.bootstrap, "group.id": "dashboard", "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe(["dashboarded"])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:  # a rebalance, requests of every kind
            consumer.poll(0.5)
        consumer.commit(offsets=[TopicPartition("dashboarded", 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    exported = {name for name, _ in scrape(browser)}
    assert queried
    assert queried - exported == set()
