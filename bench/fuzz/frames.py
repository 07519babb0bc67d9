"""Request frames for the fuzzer: a valid request of any (api_key, version) built from kio's schema, then mutated.

`valid_request` walks the kio request class the way the broker's request guard does (kio's own field
classification) and fills every field with a small, plausible value: names from a short pool (so requests reach
real topics and groups), arrays of zero to two elements, well-formed record batches in `records` fields.

`mutated_frame` then changes it in one of two ways:
- **field-aware**: one field somewhere in the request tree gets a hostile value for its type: null (also where the
  schema allows none, patched into the encoded bytes through a marker value), the boundary integers of its width,
  a huge or empty string, an array of many elements, the zero or a random UUID, a timestamp at the edge;
- **byte-level**: the encoded frame is truncated, bit-flipped, given a huge length or count somewhere, extended
  with junk, or given a size prefix that disagrees with its body.

Everything is drawn from one `random.Random`, so a seed reproduces a run frame for frame.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import random
import struct
import uuid
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)

from bench.wire import encode_frame
from kafkalite.protocol.records import Compression, RecordToWrite, build_batch

NAMES = ("fuzz-0", "fuzz-1", "fuzz-group", "fuzz-txn", "", "x")
"""Topic, group and id strings the valid requests use: a few exist on the fuzzed broker, most do not."""

_INT_BOUNDS = {
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
    "timedelta_i32": 32,
    "timedelta_i64": 64,
}
_UNSIGNED_BOUNDS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_HUGE_COUNTS = (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff\xff\x0f")
_NULL_MARKER = "\x00fuzz-null\x00"
"""A string value that stands for null in a field where kio's writer takes no None; patched after encoding."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame to send: its bytes (size prefix included), what it asks for, and how it was made."""

    data: bytes
    api_key: int
    version: int
    correlation_id: int
    mutation: str


def _small_int(kafka_type: str, rng: random.Random) -> int:
    if kafka_type in _UNSIGNED_BOUNDS:
        return rng.choice((0, 1, 2))
    if kafka_type == "int8":
        return rng.choice((0, 1, -1))
    return rng.choice((0, 1, 2, -1, 100, 5000))


def _boundary_int(kafka_type: str, rng: random.Random) -> int:
    bits = _INT_BOUNDS.get(kafka_type)
    if bits is None:
        high = (1 << _UNSIGNED_BOUNDS[kafka_type]) - 1
        return rng.choice((0, 1, high, high - 1))
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return rng.choice((low, low + 1, -2, -1, 0, 1, high - 1, high))


@functools.cache
def _batches() -> tuple[bytes, ...]:
    """A few valid record batches (built once: compressing per frame would cost more than the rest of the frame)."""
    made = []
    for codec in (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        for count in (1, 3):
            records = [RecordToWrite(b"v" * (7 * i), None if i % 2 else b"k") for i in range(count)]
            made.append(build_batch(records, now_ms=1_700_000_000_000, compression=codec))
    return tuple(made)


def _records(rng: random.Random) -> bytes:
    return rng.choice(_batches())


def _primitive(kafka_type: str, rng: random.Random) -> Any:
    """A plausible value of one kafka_type, as kio holds it."""
    if kafka_type in _INT_BOUNDS and kafka_type.startswith("timedelta"):
        return datetime.timedelta(milliseconds=rng.choice((0, 10, 100)))
    if kafka_type in _INT_BOUNDS or kafka_type in _UNSIGNED_BOUNDS:
        return _small_int(kafka_type, rng)
    if kafka_type == "string":
        return rng.choice(NAMES)
    if kafka_type == "bytes":
        return rng.choice((b"", b"\x00\x01", bytes(rng.randrange(256) for _ in range(8))))
    if kafka_type == "records":
        return _records(rng)
    if kafka_type == "uuid":
        return rng.choice((None, uuid.UUID(int=rng.getrandbits(128))))
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type == "float64":
        return rng.choice((0.0, 1.5))
    if kafka_type == "datetime_i64":
        return datetime.datetime.fromtimestamp(1_700_000_000, tz=datetime.UTC)
    raise NotImplementedError(f"no fuzz value for kafka_type {kafka_type!r}")


def _value(field: dataclasses.Field[Any], rng: random.Random) -> Any:
    shape = classify_field(field)
    if isinstance(shape, PrimitiveField):
        return _primitive(get_schema_field_type(field), rng)
    if isinstance(shape, EntityField):
        if is_optional(field) and rng.random() < 0.2:
            return None
        return _entity(shape.type_, rng)
    count = rng.choice((0, 1, 1, 2))
    if isinstance(shape, PrimitiveTupleField):
        return tuple(_primitive(get_schema_field_type(field), rng) for _ in range(count))
    assert isinstance(shape, EntityTupleField)
    return tuple(_entity(shape.type_, rng) for _ in range(count))


@functools.cache
def _fields(cls: type[Any]) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


def _entity(cls: type[Any], rng: random.Random) -> Any:
    return cls(**{f.name: _value(f, rng) for f in _fields(cls)})


@functools.cache
def request_class(api_key: int, version: int) -> type[Any]:
    return load_request_schema(api_key, version)  # type: ignore[no-any-return]


def valid_request(api_key: int, version: int, rng: random.Random) -> Any:
    """A request of (api_key, version) with small, plausible values in every field."""
    return _entity(request_class(api_key, version), rng)


# --- mutations -------------------------------------------------------------------------------------------------


def _positions(entity: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], dataclasses.Field[Any]]]:
    """Every (path, field) in the tree; a path is a tuple of field names and array indexes from the root."""
    found = []
    for field in dataclasses.fields(entity):
        found.append(((*path, field.name), field))
        value = getattr(entity, field.name)
        if dataclasses.is_dataclass(value):
            found.extend(_positions(value, (*path, field.name)))
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                if dataclasses.is_dataclass(item):
                    found.extend(_positions(item, (*path, field.name, i)))
    return found


def _replace(entity: Any, path: tuple[Any, ...], value: Any) -> Any:
    head, *rest = path
    if isinstance(head, int):
        items = list(entity)
        items[head] = _replace(items[head], tuple(rest), value) if rest else value
        return tuple(items)
    inner = _replace(getattr(entity, head), tuple(rest), value) if rest else value
    return dataclasses.replace(entity, **{head: inner})


def _hostile_value(field: dataclasses.Field[Any], current: Any, rng: random.Random) -> tuple[str, Any]:
    """(what was done, the value) for one field."""
    shape = classify_field(field)
    if shape.is_array:
        choice = rng.randrange(3)
        if choice == 0:
            return "null array", None
        if choice == 1 or not current:
            return "empty array", ()
        return "long array", tuple(current) * rng.choice((50, 500))
    if isinstance(shape, EntityField):
        return "null struct", None
    kafka_type = get_schema_field_type(field)
    if kafka_type in _INT_BOUNDS and kafka_type.startswith("timedelta"):
        return "boundary duration", datetime.timedelta(milliseconds=_boundary_int(kafka_type, rng))
    if kafka_type in _INT_BOUNDS or kafka_type in _UNSIGNED_BOUNDS:
        return "boundary int", _boundary_int(kafka_type, rng)
    if kafka_type == "string":
        return rng.choice(
            (
                ("null string", _NULL_MARKER),
                ("long string", "s" * rng.choice((249, 250, 1000, 32767))),
                ("odd string", rng.choice(("..", ".", "a/b", "ü" * 10, "__consumer_offsets", " "))),
            )
        )
    if kafka_type in ("bytes", "records"):
        return rng.choice(
            (
                ("null bytes", None if is_optional(field) else b""),
                ("junk bytes", bytes(rng.randrange(256) for _ in range(rng.choice((1, 61, 300))))),
            )
        )
    if kafka_type == "uuid":
        return "uuid", rng.choice((None, uuid.UUID(int=(1 << 128) - 1), uuid.UUID(int=rng.getrandbits(128))))
    if kafka_type == "bool":
        return "bool", not current
    return "same", current


def encode_request(api_key: int, version: int, correlation_id: int, request: Any) -> bytes:
    """The frame (size prefix included) of `request`, with null markers patched in."""
    body = _patch_nulls(encode_frame(api_key, version, correlation_id, request, client_id="fuzz")[4:])
    return struct.pack(">i", len(body)) + body


def _patch_nulls(body: bytes) -> bytes:
    """Replace each encoded `_NULL_MARKER` (compact or legacy string) with the null marker of its encoding."""
    raw = _NULL_MARKER.encode()
    compact = bytes((len(raw) + 1,)) + raw
    legacy = struct.pack(">h", len(raw)) + raw
    return body.replace(legacy, b"\xff\xff").replace(compact, b"\x00")


def _byte_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    body = bytearray(data[4:])
    choice = rng.randrange(6)
    header_end = 8  # api_key, version, correlation_id: kept, so the answer can be matched to the request
    if choice == 0 and len(body) > header_end:
        cut = rng.randrange(header_end, len(body))
        return "truncated", struct.pack(">i", cut) + bytes(body[:cut])
    if choice == 1 and len(body) > header_end:
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(header_end, len(body))] ^= 1 << rng.randrange(8)
        return "bit flips", struct.pack(">i", len(body)) + bytes(body)
    if choice == 2 and len(body) > header_end + 4:
        at = rng.randrange(header_end, len(body) - 3)
        body[at : at + 4] = rng.choice(
            (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff\xff\x0f")
        )
        return "huge count", struct.pack(">i", len(body)) + bytes(body)
    if choice == 3:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        return "trailing junk", struct.pack(">i", len(body) + len(junk)) + bytes(body) + junk
    if choice == 4:
        return "size too small", struct.pack(">i", max(0, len(body) - rng.randint(1, 8))) + bytes(body)
    run = bytes(body[:header_end]) + b"\xff" * 6 + bytes(body[header_end:])  # an endless varint after the header
    return "varint run", struct.pack(">i", len(run)) + run


def mutated_frame(api_key: int, version: int, correlation_id: int, rng: random.Random) -> Frame:
    """A frame of (api_key, version): valid about one time in ten, otherwise one field-aware or byte mutation."""
    request = valid_request(api_key, version, rng)
    roll = rng.random()
    if roll < 0.1:
        return Frame(
            encode_request(api_key, version, correlation_id, request), api_key, version, correlation_id, "valid"
        )
    positions = _positions(request)
    if roll < 0.75 and positions:
        for _ in range(5):  # a value kio cannot encode (e.g. None in a fixed-width field): draw another
            path, field = rng.choice(positions)
            try:
                what, value = _hostile_value(field, _value_at(request, path), rng)
                data = encode_request(api_key, version, correlation_id, _replace(request, path, value))
            except (TypeError, ValueError, AttributeError, struct.error, OverflowError):
                continue
            return Frame(data, api_key, version, correlation_id, f"{what} in {'.'.join(map(str, path))}")
    what, data = _byte_mutation(encode_request(api_key, version, correlation_id, request), rng)
    return Frame(data, api_key, version, correlation_id, what)


def _value_at(entity: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        entity = entity[step] if isinstance(step, int) else getattr(entity, step)
    return entity
