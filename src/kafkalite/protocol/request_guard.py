"""Bounds pre-check of a request body before kio's native reader sees it, sans-I/O.

kio's native reader sizes an array's allocation by the count the client sent before it checks that the frame holds
that many elements; a 5-byte compact count of 2**32 makes the allocation fail and the Rust runtime abort the whole
process (no Python exception). `check_body` walks the body by the kio schema of its (api_key, version) and checks
every length and count read from the wire against the bytes left, raising `ProtocolError` with the reason: an
array of N elements needs at least N times its element's smallest size, a string or bytes of N bytes needs N bytes,
and a known tagged field's value must stay within the size its tag declares. It decodes no values, it only skips
over them.

The walk is compiled once per (api_key, version) into a plan: a tuple of steps, each a small tuple whose first item
is the opcode; consecutive fixed-width fields fold into one skip. The plan is then compiled into nested closures,
one per step, so a request costs a few function calls and no dispatch. The plan follows kio's own field classification
(`kio.serial._introspect`) and the same (kafka_type, flexible, optional) mapping kio's writer uses, so it reads the
bytes kio reads:

- strings: compact (uvarint length + 1, 0 = null) when flexible, else int16 length (-1 = null);
- bytes and records: compact when flexible, else int32 length (-1 = null);
- arrays: compact (uvarint count + 1, 0 = null) when flexible, else int32 count (-1 = null);
- a null string, bytes or array where the version's schema allows none is refused here, as Kafka's parser refuses
  it ("non-nullable field was serialized as null"): kio would read it as None and every handler would have to
  check, so this is the one place that does;
- a nullable nested entity: an int8 marker (-1 = null) before it (KIP-893);
- tagged fields (flexible entities only): uvarint count, then per field its uvarint tag, uvarint size and value.
  Tagged fields are optional by definition, so their values are never nullable (as in kio).

Both flexible and legacy versions are walked: the cost is the same and it leaves no allocation to the client.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from kafkalite.errors import ProtocolError

# opcodes
_FIXED = 0  # (_FIXED, size)
_CSTR = 1  # (_CSTR, field name or None when nullable) compact string/bytes
_LSTR16 = 2  # (_LSTR16, field name or None when nullable) legacy string
_LBYTES32 = 3  # (_LBYTES32, field name or None when nullable) legacy bytes/records
_CARRAY = 4  # (_CARRAY, element plan, element min size, field name or None when nullable)
_LARRAY = 5  # (_LARRAY, element plan, element min size, field name or None when nullable)
_ENTITY = 6  # (_ENTITY, plan, nullable)
_TAGS = 7  # (_TAGS, {tag: plan})

_FIXED_SIZES = {
    "int8": 1,
    "bool": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}

_MAX_VARINT_BYTES = 5  # kio's uvarint is 32 bits

Step = tuple[Any, ...]
Plan = tuple[Step, ...]
Walker = Callable[[bytes | memoryview, int, int], int]


def _primitive_step(kafka_type: str, flexible: bool, non_null: str | None) -> Step:
    """The step of one primitive value; `non_null` names the field when a null there must be refused."""
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return (_FIXED, size)
    if kafka_type == "string":
        return (_CSTR, non_null) if flexible else (_LSTR16, non_null)
    if kafka_type in ("bytes", "records"):
        return (_CSTR, non_null) if flexible else (_LBYTES32, non_null)
    raise NotImplementedError(f"no request guard for kafka_type {kafka_type!r}")


def _min_size(plan: Plan) -> int:
    """The fewest bytes a value walked by `plan` can take (a floor: nulls count as their marker)."""
    total = 0
    for step in plan:
        op = step[0]
        if op == _FIXED:
            total += step[1]
        elif op in (_CSTR, _CARRAY, _TAGS):
            total += 1
        elif op == _LSTR16:
            total += 2
        elif op in (_LBYTES32, _LARRAY):
            total += 4
        else:  # _ENTITY
            total += 1 if step[2] else _min_size(step[1])
    return total


def _fold(steps: list[Step]) -> Plan:
    """Consecutive fixed-width steps as one."""
    folded: list[Step] = []
    for step in steps:
        if step[0] == _FIXED and folded and folded[-1][0] == _FIXED:
            folded[-1] = (_FIXED, folded[-1][1] + step[1])
        else:
            folded.append(step)
    return tuple(folded)


def _field_steps(field: dataclasses.Field[Any], flexible: bool, is_tag: bool) -> Plan:
    optional = False if is_tag else is_optional(field)
    non_null = None if optional else field.name
    field_class = classify_field(field)
    element: Plan
    if isinstance(field_class, PrimitiveField):
        return (_primitive_step(get_schema_field_type(field), flexible, non_null),)
    if isinstance(field_class, EntityField):
        return ((_ENTITY, _entity_plan(field_class.type_), optional),)
    if isinstance(field_class, PrimitiveTupleField):
        element = (_primitive_step(get_schema_field_type(field), flexible, field.name),)
    else:
        assert isinstance(field_class, EntityTupleField)
        element = _entity_plan(field_class.type_)
    return ((_CARRAY if flexible else _LARRAY, element, max(1, _min_size(element)), non_null),)


@functools.cache
def _entity_plan(entity_type: type[Any]) -> Plan:
    flexible = bool(entity_type.__flexible__)
    steps: list[Step] = []
    tagged: dict[int, Plan] = {}
    for field in dataclasses.fields(entity_type):
        tag = get_field_tag(field)
        if tag is None:
            steps.extend(_field_steps(field, flexible, is_tag=False))
        else:
            tagged[int(tag)] = _fold(list(_field_steps(field, flexible, is_tag=True)))
    if flexible:
        steps.append((_TAGS, tagged))
    return _fold(steps)


@functools.cache
def request_plan(api_key: int, version: int) -> Plan:
    """The plan of the walk over the request body of (api_key, version); kio's `KioIndexError` when there is none."""
    return _entity_plan(load_request_schema(api_key, version))


def _uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    value = 0
    shift = 0
    for i in range(pos, min(end, pos + _MAX_VARINT_BYTES)):
        byte = buf[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i + 1
        shift += 7
    if end - pos < _MAX_VARINT_BYTES:
        raise ProtocolError(f"truncated varint at byte {pos}")
    raise ProtocolError(f"varint longer than {_MAX_VARINT_BYTES} bytes at byte {pos}")


def _signed(buf: bytes | memoryview, pos: int, size: int, end: int, what: str) -> int:
    if pos + size > end:
        raise ProtocolError(f"truncated {what} at byte {pos}")
    return int.from_bytes(buf[pos : pos + size], "big", signed=True)


def _varint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """A uvarint, with the one-byte case (almost every length and count) first."""
    if pos < end:
        byte = buf[pos]
        if byte < 0x80:
            return byte, pos + 1
    return _uvarint(buf, pos, end)


def _compile_step(step: Step) -> Walker:
    op = step[0]
    if op == _FIXED:
        width = step[1]

        def fixed(buf: bytes | memoryview, pos: int, end: int) -> int:
            pos += width
            if pos > end:
                raise ProtocolError(f"body truncated: {pos - end} bytes short of a fixed-width field")
            return pos

        return fixed
    if op == _CSTR:
        non_null: str | None = step[1]

        def compact_bytes(buf: bytes | memoryview, pos: int, end: int) -> int:
            if pos < end and buf[pos] < 0x80:  # the one-byte varint, inline: this is the hot path
                n = buf[pos]
                pos += 1
            else:
                n, pos = _uvarint(buf, pos, end)
            if n > 1:
                if n - 1 > end - pos:
                    raise ProtocolError(f"compact string/bytes of {n - 1} bytes but {end - pos} left")
                return pos + n - 1
            if not n and non_null:
                raise ProtocolError(f"null in non-nullable field {non_null!r}")
            return pos

        return compact_bytes
    if op in (_LSTR16, _LBYTES32):
        size = 2 if op == _LSTR16 else 4
        non_null = step[1]

        def legacy_bytes(buf: bytes | memoryview, pos: int, end: int) -> int:
            n = _signed(buf, pos, size, end, "length")
            pos += size
            if n < 0:
                if n != -1:
                    raise ProtocolError(f"negative length {n}")
                if non_null:
                    raise ProtocolError(f"null in non-nullable field {non_null!r}")
                return pos
            if n > end - pos:
                raise ProtocolError(f"string/bytes of {n} bytes but {end - pos} left")
            return pos + n

        return legacy_bytes
    if op in (_CARRAY, _LARRAY):
        compact = op == _CARRAY
        element_plan: Plan = step[1]
        min_size: int = step[2]
        non_null = step[3]
        element_width = element_plan[0][1] if len(element_plan) == 1 and element_plan[0][0] == _FIXED else 0
        element = _compile(element_plan)

        def array(buf: bytes | memoryview, pos: int, end: int) -> int:
            if compact:
                if pos < end and buf[pos] < 0x80:
                    n = buf[pos]
                    pos += 1
                else:
                    n, pos = _uvarint(buf, pos, end)
                if not n:
                    if non_null:
                        raise ProtocolError(f"null array in non-nullable field {non_null!r}")
                    return pos
                n -= 1
            else:
                n = _signed(buf, pos, 4, end, "array count")
                pos += 4
                if n < 0:
                    if n != -1:
                        raise ProtocolError(f"negative array count {n}")
                    if non_null:
                        raise ProtocolError(f"null array in non-nullable field {non_null!r}")
                    return pos
            if n * min_size > end - pos:
                raise ProtocolError(f"array of {n} elements (at least {n * min_size} bytes) but {end - pos} left")
            if element_width:
                return pos + n * element_width
            for _ in range(n):
                pos = element(buf, pos, end)
            return pos

        return array
    if op == _ENTITY:
        entity = _compile(step[1])
        if not step[2]:
            return entity

        def nullable_entity(buf: bytes | memoryview, pos: int, end: int) -> int:
            if _signed(buf, pos, 1, end, "nullable struct marker") < 0:
                return pos + 1
            return entity(buf, pos + 1, end)

        return nullable_entity
    known = {tag: _compile(plan) for tag, plan in step[1].items()}

    def tagged_fields(buf: bytes | memoryview, pos: int, end: int) -> int:
        if pos < end and buf[pos] == 0:  # no tagged fields: the usual case
            return pos + 1
        count, pos = _varint(buf, pos, end)
        if count > end - pos:
            raise ProtocolError(f"{count} tagged fields but {end - pos} bytes left")
        for _ in range(count):
            tag, pos = _varint(buf, pos, end)
            size, pos = _varint(buf, pos, end)
            if size > end - pos:
                raise ProtocolError(f"tagged field {tag} of {size} bytes but {end - pos} left")
            value = known.get(tag)
            if value is not None:
                value(buf, pos, pos + size)
            pos += size
        return pos

    return tagged_fields


def _compile(plan: Plan) -> Walker:
    """The walker of `plan`: takes (frame, position, end), returns the position after the value."""
    walkers = tuple(_compile_step(step) for step in plan)
    if len(walkers) == 1:
        return walkers[0]

    def sequence(buf: bytes | memoryview, pos: int, end: int) -> int:
        for walk in walkers:
            pos = walk(buf, pos, end)
        return pos

    return sequence


@functools.cache
def request_walker(api_key: int, version: int) -> Walker:
    """The cached compiled walker of the request body of (api_key, version)."""
    return _compile(request_plan(api_key, version))


def check_body(walker: Walker, frame: bytes | memoryview, offset: int) -> None:
    """Raise `ProtocolError` unless every length and count in the body at `offset` fits in the frame."""
    walker(frame, offset, len(frame))


def check_request(api_key: int, version: int, frame: bytes | memoryview, offset: int) -> None:
    """`check_body` with the cached walker of (api_key, version)."""
    request_walker(api_key, version)(frame, offset, len(frame))
