"""`kafkalite consume --format`: the named formats and kcat-style templates on real librdkafka messages."""

from __future__ import annotations

import json

import confluent_kafka
import pytest

from kafkalite.cli.formats import FormatError, formatter

from .conftest import ClusterUnderTest

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def messages(kafkalite_cluster: ClusterUnderTest) -> list[confluent_kafka.Message]:
    producer = confluent_kafka.Producer({"bootstrap.servers": kafkalite_cluster.bootstrap})
    producer.produce("formats", b"v\tone", b"k1", partition=0, timestamp=1_700_000_000_000, headers=[("h", b"1")])
    producer.produce("formats", None, None, partition=0, timestamp=1_700_000_000_001)
    assert producer.flush(10) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": kafkalite_cluster.bootstrap, "group.id": "formats"})
    consumer.assign([confluent_kafka.TopicPartition("formats", 0, 0)])
    received: list[confluent_kafka.Message] = []
    while len(received) < 2:
        message = consumer.poll(10)
        assert message is not None
        assert message.error() is None
        received.append(message)
    consumer.close()
    return received


def test_named_formats(messages: list[confluent_kafka.Message]) -> None:
    assert formatter("value")(messages) == b"v\tone\n\n"
    assert formatter("key-value", b"=")(messages) == b"k1=v\tone\n=\n"
    first, second = (json.loads(line) for line in formatter("json")(messages).splitlines())
    assert first == {
        "topic": "formats", "partition": 0, "offset": 0, "timestamp": 1_700_000_000_000, "key": "k1",
        "value": "v\tone", "headers": [{"key": "h", "value": "1"}],
    }  # fmt: skip
    assert (second["key"], second["value"], second["headers"]) == (None, None, [])


def test_template_tokens_and_escapes(messages: list[confluent_kafka.Message]) -> None:
    render = formatter(r"%t|%p|%o|%k|%s|%K|%S|%T|%h|%%|\t|\\|\n")
    assert render(messages) == (
        b"formats|0|0|k1|v\tone|2|5|1700000000000|h=1|%|\t|\\|\nformats|0|1|||-1|-1|1700000000001||%|\t|\\|\n"
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("xml", "unknown format 'xml': use value, key-value, json, or a template with %-tokens"),
        ("%z", "unknown token %z in format '%z' (known: %t %p %o %k %s %K %S %T %h %%)"),
        ("%s%", "format '%s%' ends in a lone '%'"),
        ("%s\\", "format '%s\\\\' ends in a lone '\\\\'"),
    ],
)
def test_bad_templates(spec: str, message: str) -> None:
    with pytest.raises(FormatError) as raised:
        formatter(spec)
    assert str(raised.value) == message
