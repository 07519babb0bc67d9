"""Control records: the commit and abort markers a broker writes to end a transaction (KIP-98), in Kafka's encoding.

A control batch is a RecordBatch v2 whose attributes have the transactional bit (0x10) and the control bit (0x20)
set, carrying the producer id and epoch of the transaction it ends, base sequence -1, and exactly one record:

    key   (ControlRecordType):    int16 version = 0, int16 type (0 = ABORT, 1 = COMMIT)
    value (EndTransactionMarker): int16 version = 0, int32 coordinator_epoch

Only a broker writes control batches; clients skip them when they read (they occupy an offset, so a consumer's
position moves past them). Readers accept key versions above 0 (the type stays the second int16), as Kafka does.
"""

from __future__ import annotations

import enum
import struct

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.checksum import crc32c
from kafkalite.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_SEQUENCE,
    BatchHeader,
    RecordToWrite,
    encode_record,
    iter_records,
)

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CONTROL_KEY_VERSION = 0
MARKER_VALUE_VERSION = 0


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


def build_marker(
    producer_id: int, producer_epoch: int, control_type: ControlType, coordinator_epoch: int, *, now_ms: int
) -> bytes:
    """One control batch (base offset 0, patched on append) ending a transaction of `producer_id`."""
    record = RecordToWrite(
        _VALUE.pack(MARKER_VALUE_VERSION, coordinator_epoch), _KEY.pack(CONTROL_KEY_VERSION, control_type), [], now_ms
    )
    body = encode_record(0, 0, record)
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            ATTR_TRANSACTIONAL | ATTR_CONTROL,
            0,
            now_ms,
            now_ms,
            producer_id,
            producer_epoch,
            NO_SEQUENCE,
            1,
        )
        + body
    )
    head = struct.pack(">qiibI", 0, HEADER_SIZE - LOG_OVERHEAD + len(body), -1, MAGIC, crc32c(after_crc))
    return head + after_crc


def control_type(batch: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> ControlType | None:
    """The marker type of the control batch at `pos`; None for control records that are not markers."""
    if not header.is_control:
        raise ValueError("not a control batch")
    for record in iter_records(batch, pos):
        if record.key is None or len(record.key) < _KEY.size:
            raise CorruptRecordError(f"control record at offset {record.offset} has a key of {record.key!r}")
        _version, kind = _KEY.unpack_from(record.key)
        return ControlType(kind) if kind in (ControlType.ABORT, ControlType.COMMIT) else None
    raise CorruptRecordError(f"control batch at offset {header.base_offset} holds no record")


def marker_coordinator_epoch(batch: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The coordinator epoch of the transaction marker at `pos`."""
    for record in iter_records(batch, pos):
        if record.value is None or len(record.value) < _VALUE.size:
            raise CorruptRecordError(f"transaction marker at offset {record.offset} has a value of {record.value!r}")
        return int(_VALUE.unpack_from(record.value)[1])
    raise CorruptRecordError("control batch holds no record")
