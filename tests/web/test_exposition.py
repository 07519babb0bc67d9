"""Unit tests of the HTTP layer's pieces: the exposition writer against prometheus-client's own, the counters'
histogram, the guard's Host and write rules, answer error counting, and the display helpers."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector, CollectorRegistry

from kafkalite.broker import Broker
from kafkalite.http.exposition import Columns, label_text, render
from kafkalite.http.guard import Guard, host_name, is_loopback
from kafkalite.http.metrics import BrokerCollector
from kafkalite.http.render import as_hex, as_json, human_bytes, retention, timestamp
from kafkalite.protocol.messages import api_schema
from kafkalite.server.dispatch import count_errors
from kafkalite.stats import Histogram


class Fixed(Collector):
    def __init__(self, *families: object) -> None:
        self.families = families

    def collect(self):  # type: ignore[no-untyped-def]
        yield from self.families


def awkward_families() -> list[object]:
    gauge = GaugeMetricFamily("g", "help with \\ and\nnewline", labels=["topic", "partition"])
    gauge.add_metric(['we"ird\\na\nme', "0"], 12345678)
    gauge.add_metric(["plain", "1"], -3)
    gauge.add_metric(["small", "2"], 0.25)
    gauge.add_metric(["huge", "3"], 10**20)
    counter = CounterMetricFamily("c", "a counter", labels=["request"])
    counter.add_metric(["Produce"], 999_999)
    counter.add_metric(["Fetch"], 1_000_000)
    single = CounterMetricFamily("unlabelled", "no labels", value=7)
    histogram = HistogramMetricFamily("h_seconds", "a histogram", labels=["request"])
    observed = Histogram((0.001, 0.01))
    for value in (0.0005, 0.001, 0.5):
        observed.observe(value)
    histogram.add_metric(["Produce"], observed.cumulative(), observed.total)
    return [gauge, counter, single, histogram]


def test_render_writes_exactly_what_generate_latest_writes() -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed(*awkward_families()))
    assert render(registry.collect()) == generate_latest(registry)


async def test_render_of_a_busy_broker_matches_and_parses() -> None:
    async with Broker(None) as broker:
        await broker.create_topic("t", 3)
        await broker.offsets.commit("g", "t", 1, 0)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(BrokerCollector(broker))
        rendered = render(registry.collect())
        expected = generate_latest(registry)
        # the uptime gauge moves between the two collections; everything else is identical
        strip = lambda text: [line for line in text.splitlines() if not line.startswith(b"kafkalite_uptime")]  # noqa: E731
        assert strip(rendered) == strip(expected)
        names = {family.name for family in text_string_to_metric_families(rendered.decode())}
        assert {"kafka_log_log_logendoffset", "kafka_consumergroup_lag", "kafkalite_request_latency_seconds"} <= names


def test_histogram_buckets_are_inclusive_upper_bounds_and_cumulative() -> None:
    histogram = Histogram((1.0, 2.0))
    for value in (0.5, 1.0, 1.5, 2.0, 3.0):
        histogram.observe(value)
    assert histogram.cumulative() == [("1.0", 2), ("2.0", 4), ("+Inf", 5)]
    assert histogram.count == 5
    assert histogram.total == 8.0


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("app.localhost", True),
        ("LOCALHOST", True),
        ("example.com", False),
        ("localhost.example.com", False),
        ("10.0.0.1", False),
        ("", False),
    ],
)
def test_loopback_names(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_host_header_parsing() -> None:
    assert host_name("localhost:9644") == "localhost"
    assert host_name("[::1]:9644") == "::1"
    assert host_name("[::1]") == "::1"
    assert host_name("example.com") == "example.com"


def test_guard_rules() -> None:
    local = Guard("127.0.0.1")
    assert local.local_only
    assert local.host_allowed("localhost:9644")
    assert not local.host_allowed("rebound.example:9644")
    assert not local.host_allowed(None)
    exposed = Guard("0.0.0.0")
    assert not exposed.local_only
    assert not Guard("").local_only  # every interface
    assert not Guard("::").local_only
    assert exposed.host_allowed("broker.internal:9644")
    host = "localhost:9644"
    token = local.token
    assert local.write_refusal({"Origin": "http://localhost:9644"}, host, token) is None
    assert local.write_refusal({}, host, token) is None  # no Origin (older browsers, curl): the token decides
    assert local.write_refusal({"Origin": "http://evil.example"}, host, token) is not None
    assert local.write_refusal({"Origin": "null"}, host, token) is not None
    assert local.write_refusal({"Sec-Fetch-Site": "cross-site"}, host, token) is not None
    assert local.write_refusal({"Sec-Fetch-Site": "same-site"}, host, token) is not None
    assert local.write_refusal({}, host, None) is not None
    assert local.write_refusal({}, host, token + "x") is not None
    assert Guard("127.0.0.1").token != token


def test_count_errors_walks_nested_answers_and_skips_pre_encoded_ones() -> None:
    schema = api_schema(19, 7)  # CreateTopics v7: errors per topic
    response = schema.build(
        "CreateTopicsResponse",
        throttle_time=0,
        topics=[
            schema.build(
                "CreatableTopicResult",
                name=name,
                topic_id=None,
                error_code=code,
                error_message=None,
                topic_config_error_code=0,
                num_partitions=1,
                replication_factor=1,
                configs=[],
            )
            for name, code in (("a", 36), ("b", 0), ("c", 36), ("d", 17))
        ],
    )
    counts: dict[int, int] = {}
    count_errors(response, counts)
    assert counts == {36: 2, 17: 1}
    count_errors(b"pre-encoded", counts)
    assert counts == {36: 2, 17: 1}
    assert ErrorCode(36).name == "topic_already_exists"


def test_display_helpers() -> None:
    assert human_bytes(0) == "0 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(5 * 1024**3) == "5.0 GiB"
    assert retention("-1") == "forever"
    assert retention("604800000") == "7d"
    assert retention("5400000") == "1h 30m"
    assert retention("90061000") == "1d 1h"  # the two largest units
    assert retention("0") == "0s"
    assert timestamp(-1) == "—"
    assert timestamp(0) == "1970-01-01 00:00:00.000 UTC"
    assert as_json(b'{"a":[1,2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert as_json(b"not json") is None
    assert as_json(b"\xff\xfe") is None
    assert as_hex(b"AB\x00") == "00000000  41 42 00" + " " * 41 + "AB."
    assert as_hex(b"x" * 40, limit=16).endswith("… 24 more bytes")


def test_render_of_families_freed_as_it_goes_never_mixes_up_their_labels() -> None:
    def one_at_a_time():  # type: ignore[no-untyped-def]
        for i in range(200):  # each family (and its labels dict) is garbage once the next is asked for
            family = GaugeMetricFamily(f"g{i}", "doc", labels=["n"])
            family.add_metric([str(i)], i)
            yield family

    lines = render(one_at_a_time()).decode().splitlines()
    assert [line for line in lines if not line.startswith("#")] == [f'g{i}{{n="{i}"}} {i}.0' for i in range(200)]


def test_columns_render_as_generate_latest_does_and_refuse_lost_samples() -> None:
    labels = [{"topic": t, "partition": p} for t, p in (('we"ird\\na\nme', "0"), ("plain", "10"))]
    rows = [(row, label_text(row)) for row in labels]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed(Columns("kafka_log_log_size", "bytes", rows, [12345678, 3])))
    assert render(registry.collect()) == generate_latest(registry)
    with pytest.raises(TypeError):
        Columns("x", "y", rows, [1, 2]).samples = [object()]  # type: ignore[list-item]


async def test_scrapes_reuse_label_text_and_forget_deleted_topics_and_groups() -> None:
    async with Broker(None) as broker:
        await broker.create_topic("kept", 2)
        await broker.create_topic("gone", 2)
        await broker.offsets.commit("g", "gone", 1, 0)
        collector = BrokerCollector(broker)
        first = {f.name: f for f in collector.collect()}
        again = {f.name: f for f in collector.collect()}
        assert first["kafka_log_log_size"].rows[0] is again["kafka_log_log_size"].rows[0]  # rendered once
        await broker.delete_topic("gone")
        after = {f.name: f for f in collector.collect()}
        shown = {labels["topic"] for labels, _ in after["kafka_log_log_size"].rows}
        assert "kept" in shown
        assert "gone" not in shown
        assert after["kafka_consumergroup_lag"].rows == []
        assert not any("gone" in key for key in collector._partition_rows._rows)
        assert not collector._group_rows._rows
