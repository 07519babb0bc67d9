"""Version-agnostic kio message building and codecs (protocol.messages)."""

from __future__ import annotations

import datetime
import io
import struct

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.serial import entity_reader, entity_writer

from kafkalite.errors import ProtocolError
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.wire import decode_request_header


def test_build_drops_fields_the_version_lacks_and_converts_plain_values() -> None:
    v3 = api_schema(0, 3)
    partition = v3.build(
        "PartitionProduceResponse",
        index=1,
        error_code=0,
        base_offset=10,
        log_append_time=-1,
        log_start_offset=0,
        record_errors=[],
        error_message=None,
    )
    assert partition.error_code is ErrorCode.none
    assert partition.log_append_time is None
    assert not hasattr(partition, "log_start_offset")  # v5+
    response = v3.build("ProduceResponse", responses=[], throttle_time=250)
    assert response.throttle_time == datetime.timedelta(milliseconds=250)


def test_build_converts_epoch_millis_to_a_timestamp() -> None:
    partition = api_schema(0, 11).build(
        "PartitionProduceResponse", index=0, error_code=0, base_offset=0, log_append_time=1000, record_errors=[]
    )
    assert partition.log_append_time == datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.UTC)


def test_build_refuses_a_missing_required_field() -> None:
    with pytest.raises(TypeError):
        api_schema(0, 11).build("PartitionProduceResponse", index=0)


def test_decode_reads_the_body_after_the_header() -> None:
    schema = api_schema(3, 12)
    assert schema.request_header_version == 2
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name="t"),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    buffer = io.BytesIO()
    buffer.write(struct.pack(">hhih", 3, 12, 1, -1) + b"\x00")
    entity_writer(MetadataRequest)(buffer, request)
    frame = buffer.getvalue()
    _, offset = decode_request_header(frame, 2)
    assert schema.decode(frame, offset) == request


def test_undecodable_body_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="undecodable"):
        api_schema(3, 12).decode(b"\xff\xff\xff\xff", 0)


@pytest.mark.parametrize(("api_key", "version", "header_version"), [(18, 3, 0), (18, 0, 0), (3, 12, 1), (3, 1, 0)])
def test_encode_response_uses_the_right_header(api_key: int, version: int, header_version: int) -> None:
    schema = api_schema(api_key, version)
    assert schema.response_header_version == header_version
    if api_key == 18:
        response = schema.build("ApiVersionsResponse", error_code=0, api_keys=(), throttle_time=0)
    else:
        response = schema.build(
            "MetadataResponse", throttle_time=0, brokers=(), cluster_id="c", controller_id=0, topics=()
        )
    frame = schema.encode_response(5, response)
    size, correlation_id = struct.unpack_from(">ii", frame)
    assert (size, correlation_id) == (len(frame) - 4, 5)
    body_at = 8 + header_version  # v1 adds one byte: an empty tagged-field section
    decoded, consumed = entity_reader(type(response))(frame[body_at:], 0)
    assert decoded == response
    assert consumed == len(frame) - body_at
