"""`/metrics`: the broker's plain counters turned into Prometheus metric families at scrape time.

Nothing on the produce or fetch path touches prometheus-client: partitions, the wire server and the logs bump plain
attributes (`kafkalite.stats`, `Partition.bytes_in`...), and `BrokerCollector.collect` reads them when Prometheus
scrapes. Consumer lag (log end offset − committed offset) is computed here too, from the committed-offset table and
each partition's high watermark: no log is read.

Names follow Kafka's JMX exporter (`kafka_server_brokertopicmetrics_*`, `kafka_log_log_*`,
`kafka_network_requestmetrics_*`) and kafka_exporter (`kafka_consumergroup_*`) where a counterpart exists, so
existing dashboards work; the rest are `kafkalite_*`. Every name is listed in the README.

Cost: a scrape is one pass over the partitions and one over the committed-offset table, reading integers. The
per-row families are `exposition.Columns`, whose label text per (topic, partition) and per (group, topic,
partition) the collector renders once and keeps between scrapes (`LabelCache`: rows not seen in a scrape are
dropped, so deleted topics and groups do not accumulate); a scrape then appends two numbers per row.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator

from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from kafkalite.broker import Broker, dead_letter_topic
from kafkalite.broker.dead_letter_format import DLQ_SUFFIX, REPLAY_GROUP
from kafkalite.http.exposition import Columns, Row, label_text, render
from kafkalite.stats import Histogram

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


def _histogram(name: str, doc: str, labels: list[str]) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=labels)


def _add_histogram(family: HistogramMetricFamily, values: list[str], histogram: Histogram) -> None:
    family.add_metric(values, histogram.cumulative(), histogram.total)


class LabelCache:
    """Rendered label rows by key, kept from one scrape to the next; `rotate()` after a scrape forgets rows that
    scrape did not use."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self._rows: dict[tuple[str, ...], Row] = {}
        self._used: dict[tuple[str, ...], Row] = {}

    def row(self, key: tuple[str, ...]) -> Row:
        found = self._used.get(key)
        if found is None:
            found = self._rows.get(key)
            if found is None:
                labels = dict(zip(self.names, key, strict=True))
                found = (labels, label_text(labels))
            self._used[key] = found
        return found

    def rotate(self) -> None:
        self._rows, self._used = self._used, {}


class BrokerCollector(Collector):
    """A prometheus-client collector over one broker: every family is built fresh on each scrape, from label text
    kept between scrapes."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._partition_rows = LabelCache(("topic", "partition"))
        self._group_rows = LabelCache(("consumergroup", "topic", "partition"))
        self._group_topic_rows = LabelCache(("consumergroup", "topic"))

    def collect(self) -> Iterator[Metric]:
        yield from self._info()
        yield from self._topics()
        yield from self._requests()
        yield from self._groups()
        yield from self._storage()

    def _info(self) -> Iterator[Metric]:
        stats = self.broker.stats
        info = GaugeMetricFamily("kafkalite_broker_info", "Broker identity (always 1)", labels=["cluster_id", "node"])
        info.add_metric([self.broker.cluster_id, str(self.broker.node_id)], 1)
        yield info
        yield GaugeMetricFamily(
            "kafkalite_broker_start_time_seconds", "When the broker started (Unix time)", value=stats.started_at
        )

    def _topics(self) -> Iterator[Metric]:
        bytes_in = CounterMetricFamily(
            "kafka_server_brokertopicmetrics_bytesin", "Bytes of record batches produced", labels=["topic"]
        )
        bytes_out = CounterMetricFamily(
            "kafka_server_brokertopicmetrics_bytesout", "Bytes of record batches fetched", labels=["topic"]
        )
        messages_in = CounterMetricFamily(
            "kafka_server_brokertopicmetrics_messagesin", "Records produced", labels=["topic"]
        )
        rows: list[Row] = []
        starts: list[float] = []
        ends: list[float] = []
        sizes: list[float] = []
        cache = self._partition_rows
        partitions = GaugeMetricFamily("kafka_topic_partitions", "Partitions of the topic", labels=["topic"])
        dead = GaugeMetricFamily(
            "kafkalite_dead_letters", "Records held in the topic's dead-letter topic (<topic>.DLQ)", labels=["topic"]
        )
        pending = GaugeMetricFamily(
            "kafkalite_dead_letters_pending_replay", "Dead letters of the topic not replayed yet", labels=["topic"]
        )
        offsets = self.broker.offsets
        for topic in list(self.broker.topics.values()):
            name = topic.name
            total_in = total_out = total_messages = 0
            for partition in topic.partitions:
                total_in += partition.bytes_in
                total_out += partition.bytes_out
                total_messages += partition.messages_in
                rows.append(cache.row((name, str(partition.index))))
                starts.append(partition.log_start_offset)
                ends.append(partition.high_watermark)
                sizes.append(partition.log.size_bytes)
            bytes_in.add_metric([name], total_in)
            bytes_out.add_metric([name], total_out)
            messages_in.add_metric([name], total_messages)
            partitions.add_metric([name], len(topic.partitions))
            if name.endswith(DLQ_SUFFIX):
                source = name[: -len(DLQ_SUFFIX)]
                if dead_letter_topic(source) == name:
                    held = waiting = 0
                    for partition in topic.partitions:
                        held += partition.message_count
                        replayed = offsets.fetch(REPLAY_GROUP, name, partition.index)
                        position = max(partition.log_start_offset, replayed.offset if replayed else 0)
                        waiting += max(0, partition.high_watermark - position)
                    dead.add_metric([source], held)
                    pending.add_metric([source], waiting)
        cache.rotate()
        start = Columns("kafka_log_log_logstartoffset", "First offset still in the log", rows, starts)
        end = Columns("kafka_log_log_logendoffset", "Offset the next record will get", rows, ends)
        size = Columns("kafka_log_log_size", "Bytes held by the partition's log", rows, sizes)
        yield from (bytes_in, bytes_out, messages_in, partitions, start, end, size, dead, pending)

    def _requests(self) -> Iterator[Metric]:
        stats = self.broker.stats.requests
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests", "Requests served, by API", labels=["request"]
        )
        errors = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Error codes in answers, by API and error (one per partition or resource that failed)",
            labels=["request", "error"],
        )
        latency = _histogram(
            "kafkalite_request_latency_seconds", "Time from a decoded request to its encoded answer", ["request"]
        )
        for api in list(stats.apis.values()):
            requests.add_metric([api.name], api.requests)
            for code, count in list(api.errors.items()):
                errors.add_metric([api.name, error_name(code)], count)
            _add_histogram(latency, [api.name], api.latency)
        yield from (requests, errors, latency)
        yield GaugeMetricFamily(
            "kafka_server_socketservermetrics_connection_count", "Open client connections", value=stats.connections_open
        )
        yield CounterMetricFamily(
            "kafka_server_socketservermetrics_connection_creation",
            "Client connections accepted",
            value=stats.connections_total,
        )
        yield CounterMetricFamily(
            "kafka_server_socketservermetrics_connection_close",
            "Client connections closed",
            value=stats.connections_closed,
        )

    def _groups(self) -> Iterator[Metric]:
        groups = self.broker.groups
        cache = self._group_rows
        rows: list[Row] = []
        offsets: list[float] = []
        lags: list[float] = []
        sums: dict[tuple[str, str], int] = defaultdict(int)
        topics = self.broker.topics
        for (group, topic_name, index), committed in self.broker.offsets.entries():
            topic = topics.get(topic_name)
            if topic is None or not 0 <= index < len(topic.partitions) or group.startswith(REPLAY_GROUP):
                continue
            behind = max(0, topic.partitions[index].high_watermark - committed.offset)
            rows.append(cache.row((group, topic_name, str(index))))
            offsets.append(committed.offset)
            lags.append(behind)
            sums[group, topic_name] += behind
        cache.rotate()
        sum_rows = [self._group_topic_rows.row(key) for key in sums]
        self._group_topic_rows.rotate()
        yield Columns("kafka_consumergroup_current_offset", "Committed offset", rows, offsets)
        yield Columns("kafka_consumergroup_lag", "Log end offset minus committed offset", rows, lags)
        yield Columns(
            "kafka_consumergroup_lag_sum", "Lag summed over the topic's partitions", sum_rows, list(sums.values())
        )

        members = GaugeMetricFamily("kafka_consumergroup_members", "Members of the group", labels=["consumergroup"])
        state = GaugeMetricFamily(
            "kafkalite_consumergroup_state",
            "The group's state (1 for the current one)",
            labels=["consumergroup", "state"],
        )
        for listing in groups.list_groups():
            if listing.group_id.startswith(REPLAY_GROUP):  # replay progress, not a consumer group
                continue
            state.add_metric([listing.group_id, listing.state], 1)
            empty = listing.state in ("Empty", "Dead")  # no members: no need to describe it
            members.add_metric([listing.group_id], 0 if empty else len(groups.describe(listing.group_id).members))
        rebalances = CounterMetricFamily(
            "kafkalite_consumergroup_rebalances", "Rebalances completed (new generations)", labels=["consumergroup"]
        )
        for group, count in list(groups.rebalances.items()):
            rebalances.add_metric([group], count)
        yield from (members, state, rebalances)

    def _storage(self) -> Iterator[Metric]:
        sync = self.broker.stats.sync
        flush = _histogram("kafkalite_log_flush_seconds", "Duration of a group-commit fsync round", [])
        _add_histogram(flush, [], sync.latency)
        batch = _histogram("kafkalite_log_flush_batch_appends", "Appends made durable by one fsync round", [])
        _add_histogram(batch, [], sync.batch_size)
        yield from (flush, batch)
        yield CounterMetricFamily(
            "kafkalite_log_flush_failures",
            "failed fsyncs of sync rounds, roll checkpoints and log closes (each stops its log for writes)",
            value=sync.failures,
        )
        retention = self.broker.stats.retention
        yield CounterMetricFamily("kafkalite_retention_passes", "Retention passes run", value=retention.passes)
        yield CounterMetricFamily(
            "kafkalite_retention_segments_deleted", "Segments deleted by retention", value=retention.segments_deleted
        )
        yield CounterMetricFamily(
            "kafkalite_retention_failures", "Retention passes that failed", value=retention.failures
        )
        producers = self.broker.stats.producer_expiration
        yield GaugeMetricFamily(
            "kafkalite_producer_ids",
            "Idempotent and transactional producers whose state the partitions keep, summed over partitions",
            value=sum(len(p.producers) for topic in list(self.broker.topics.values()) for p in topic.partitions),
        )
        yield CounterMetricFamily(
            "kafkalite_producer_ids_expired",
            "Partition entries forgotten by producer.id.expiration.ms",
            value=producers.expired,
        )
        yield CounterMetricFamily(
            "kafkalite_producer_expiration_failures", "Producer expiration checks that failed", value=producers.failures
        )
        yield GaugeMetricFamily(
            "kafkalite_uptime_seconds",
            "Seconds since the broker started",
            value=time.time() - self.broker.stats.started_at,
        )


def registry_for(broker: Broker) -> CollectorRegistry:
    """A registry holding only this broker's collector (tests run several brokers in one process), plus the
    process collector (`process_*`: CPU, memory, open files)."""
    from prometheus_client import ProcessCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    ProcessCollector(registry=registry)
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The registry's families in the text format (`exposition.render`: what `generate_latest` writes, faster)."""
    return render(registry.collect())
