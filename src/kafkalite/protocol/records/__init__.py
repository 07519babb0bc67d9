"""RecordBatch v2 (magic 2): the unit KafkaLite stores, ships and never re-encodes on the hot path.

Three modules, each owning one part of the format (every name is re-exported here, so callers import from
`kafkalite.protocol.records`):

- `batch`: the 61-byte batch header (layout, `read_header`, CRC-32C, `read_batches`, `valid_prefix` for recovery)
  and the only two rewrites the broker makes, the base offset and the LogAppendTime stamp. The produce path and
  the storage engines need nothing else.
- `codec`: the records inside a batch: `build_batch` and its varint tables, `iter_records` and `decode_columns`
  with their optimistic fast path and the strict decoder behind it.
- `compression`: gzip, snappy (xerial-framed and raw), lz4 frames and zstd, in the framings Kafka clients use, and
  the decompression-bomb bound.

Invariants: the broker reads only the header and checks the CRC; everything that fails a check raises
`CorruptRecordError` with the reason, before any byte is changed; a patch never recomputes the CRC of a batch whose
stored CRC is already wrong, so corruption is never laundered into a "valid" batch.
"""

from kafkalite.protocol.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    CRC_START,
    HEADER_SIZE,
    INT64_MAX,
    INT64_MIN,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchHeader,
    Compression,
    patch_log_append_time,
    read_batches,
    read_header,
    rebased,
    unpack_header,
    valid_prefix,
    verify_crc,
)
from kafkalite.protocol.records.codec import (
    Record,
    RecordColumns,
    RecordToWrite,
    build_batch,
    decode_columns,
    decode_varint,
    encode_record,
    encode_varint,
    iter_records,
)
from kafkalite.protocol.records.compression import MAX_DECOMPRESSED_BYTES, compress, decompress

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "ATTR_CONTROL",
    "ATTR_LOG_APPEND_TIME",
    "ATTR_TRANSACTIONAL",
    "CRC_START",
    "HEADER_SIZE",
    "INT64_MAX",
    "INT64_MIN",
    "LOG_OVERHEAD",
    "MAGIC",
    "MAX_DECOMPRESSED_BYTES",
    "MIN_BATCH_LENGTH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BatchHeader",
    "Compression",
    "Record",
    "RecordColumns",
    "RecordToWrite",
    "build_batch",
    "compress",
    "decode_columns",
    "decode_varint",
    "decompress",
    "encode_record",
    "encode_varint",
    "iter_records",
    "patch_log_append_time",
    "read_batches",
    "read_header",
    "rebased",
    "unpack_header",
    "valid_prefix",
    "verify_crc",
]
