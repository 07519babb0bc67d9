"""Compression of a batch body: the four codecs, in the framings Kafka clients write and read.

Compression (attribute bits 0-2) covers everything after byte 61, as one stream, in the format Kafka clients use:

- gzip (1): an RFC 1952 gzip stream; concatenated members are accepted.
- snappy (2): Java clients write snappy-java's "xerial" framing: the 16-byte header ``\\x82SNAPPY\\x00`` + int32
  version + int32 compatible version, then blocks of int32 big-endian length + one raw snappy block (each at most
  32 KiB uncompressed). librdkafka writes one raw snappy block, no framing. Java's reader accepts both, and so does
  `decompress`; `compress` writes the xerial framing, as Java clients do.
- lz4 (3): the LZ4 *frame* format with independent blocks (KIP-57: Java's reader refuses linked blocks).
- zstd (4): standard zstd frames. librdkafka's frames may omit the content size; those decode too.

Decompression bombs: a snappy body declares its uncompressed size, so it is refused above `MAX_DECOMPRESSED_BYTES`
before anything is allocated. cramjam has no bounded-output API for gzip, lz4 and zstd (`output_len` preallocates,
it does not limit; its streaming decompressors want the whole input at once), so those are bounded only by their
format: about 1032x the input for gzip, about 255x for lz4, tens of thousands x for zstd. The broker never
decompresses (batches stay opaque), so only a consumer that decodes a hostile batch is exposed.
"""

from __future__ import annotations

import struct

import cramjam

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.records.batch import Compression

MAX_DECOMPRESSED_BYTES = 1 << 30

_INT32 = struct.Struct(">i")

# snappy-java's stream header: marker byte, "SNAPPY", NUL, then int32 version 1 and int32 minimum compatible version 1.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's default: uncompressed bytes per block

# gzip's and zstd's own default levels, which are also Kafka's producer defaults. lz4 uses its fast (non-HC)
# compressor: Kafka's default lz4 level 9 means LZ4HC, which trades much more CPU for a little size.
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress a batch body with `codec` (identity for NONE), in the framing Java Kafka clients write."""
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=_GZIP_LEVEL))
    if codec == Compression.SNAPPY:
        return _xerial_compress(data)
    if codec == Compression.LZ4:
        # Independent blocks and no content checksum, as Java's KafkaLZ4BlockOutputStream writes (KIP-57).
        compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec: Compression, data: bytes) -> bytes:
    """Decompress a batch body written with `codec`; malformed input raises `CorruptRecordError`.

    Accepts what any Kafka client writes: xerial-framed or raw snappy, LZ4 frames with linked or independent
    blocks, zstd frames with or without a content size, multi-member gzip.
    """
    if codec == Compression.NONE:
        return data
    try:
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Compression.SNAPPY:
            return _snappy_decompress(data)
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, OSError, ValueError) as exc:
        raise CorruptRecordError(f"{Compression(codec).name} decompression failed: {exc}") from None
    raise CorruptRecordError(f"unknown compression codec {codec}")


def _xerial_compress(data: bytes) -> bytes:
    view = memoryview(data)
    out = [_XERIAL_HEADER]
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data: bytes) -> bytes:
    """Xerial-framed or raw snappy; each block's declared size is checked before anything is decompressed.

    Raises ValueError (or cramjam's error), which `decompress` turns into `CorruptRecordError`.
    """
    if not data.startswith(_XERIAL_MAGIC):
        _check_decompressed_size(cramjam.snappy.decompress_raw_len(data))
        return bytes(cramjam.snappy.decompress_raw(data))
    view = memoryview(data)
    blocks: list[memoryview] = []
    total = 0
    pos, end = 0, len(data)
    while pos < end:
        # The header again: a concatenation of streams, which snappy-java reads too. No block length can look like
        # it (0x82 as the first byte would be a negative int32). Version fields are ignored, as Java and
        # kafka-python do: some writers put them little-endian.
        if data.startswith(_XERIAL_MAGIC, pos):
            if end - pos < len(_XERIAL_HEADER):
                raise ValueError(f"truncated xerial snappy header at byte {pos}")
            pos += len(_XERIAL_HEADER)
            continue
        if end - pos < 4:
            raise ValueError(f"truncated xerial snappy block length at byte {pos}")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or length > end - pos:
            raise ValueError(f"xerial snappy block of {length} bytes at byte {pos} overruns the stream")
        block = view[pos : pos + length]
        total += cramjam.snappy.decompress_raw_len(block)
        _check_decompressed_size(total)
        blocks.append(block)
        pos += length
    return b"".join([bytes(cramjam.snappy.decompress_raw(block)) for block in blocks])


def _check_decompressed_size(size: int) -> None:
    if size > MAX_DECOMPRESSED_BYTES:
        raise ValueError(f"decompressed size {size} exceeds the limit of {MAX_DECOMPRESSED_BYTES} bytes")
