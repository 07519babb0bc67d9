"""Transaction markers in Kafka's encoding, checked field by field and against kafka-python's independent reader."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.control_records import ControlType, build_marker, control_type, marker_coordinator_epoch
from kafkalite.protocol.records import ATTR_CONTROL, ATTR_TRANSACTIONAL, iter_records, read_header, verify_crc


@pytest.mark.parametrize("kind", list(ControlType))
def test_marker_layout(kind: ControlType) -> None:
    batch = build_marker(4242, 7, kind, 3, now_ms=1_700_000_000_123)
    header = read_header(batch)
    verify_crc(batch, 0, header)
    assert header.attributes == ATTR_TRANSACTIONAL | ATTR_CONTROL == 0x30
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4242, 7, -1)
    assert (header.record_count, header.last_offset_delta) == (1, 0)
    assert header.base_timestamp == header.max_timestamp == 1_700_000_000_123
    (record,) = iter_records(batch)
    assert record.key == struct.pack(">hh", 0, int(kind))
    assert record.value == struct.pack(">hi", 0, 3)
    assert control_type(batch, 0, header) is kind
    assert marker_coordinator_epoch(batch) == 3


@pytest.mark.parametrize("kind", list(ControlType))
def test_kafka_python_reads_our_marker(kind: ControlType) -> None:
    batch = DefaultRecordBatch(build_marker(1, 0, kind, 0, now_ms=1000))
    assert batch.is_control_batch
    assert batch.is_transactional
    assert batch.validate_crc()
    (record,) = list(batch)
    assert record.abort == (kind is ControlType.ABORT)
    assert record.commit == (kind is ControlType.COMMIT)


def test_other_control_types_are_not_markers_and_bad_keys_are_errors() -> None:
    batch = bytearray(build_marker(1, 0, ControlType.COMMIT, 0, now_ms=1000))
    header = read_header(batch)
    with pytest.raises(ValueError, match="not a control batch"):
        control_type(batch, 0, header._replace(attributes=0))
    key_at = bytes(batch).rindex(struct.pack(">hh", 0, 1) + b"\x0c")  # the key, then the value length 6 (zigzag)
    batch[key_at + 3] = 5  # a control type Kafka defines for other uses (e.g. leader change)
    assert control_type(batch, 0, header) is None
    batch[key_at - 1] = 2  # key length 1 (zigzag varint): too short for a control key
    with pytest.raises(CorruptRecordError):
        control_type(batch, 0, header)
