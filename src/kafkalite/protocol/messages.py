"""Version-agnostic access to kio's generated message classes, sans-I/O.

kio generates one module per (API, version), each with its own request, response and nested classes, whose fields
come and go with the version. `ApiSchema` wraps one such pair so that a handler can be written once for a range of
versions:

- `decode(frame, offset)` reads the request body (kio's native reader, which wants `bytes`; a large Produce request
  is read by `produce_request`, which leaves its records in the frame instead of copying them);
- `build("ClassName", **fields)` constructs a response-side class of this version, silently dropping fields the
  version does not have and converting plain values into kio's field types (error codes into `ErrorCode`,
  milliseconds into `timedelta`, epoch milliseconds into `datetime`, -1 into a null timestamp). Lists may stand
  in for kio's tuples.
  A field the version requires and the caller did not give raises `TypeError`: handlers must name every field any
  version needs;
- `encode_response(correlation_id, response)` writes the complete frame, with the response header version the API
  and version call for (ApiVersions always answers with header v0). `response` may also be a body already encoded
  (`bytes`), e.g. the Produce answer `produce_response` writes.

Schemas are cached per (api_key, version); field tables per class. kio's writers are pure Python, so the conversion
table is computed once per class and the hot path is a dict lookup per given field.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import sys
from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from kafkalite.errors import ProtocolError
from kafkalite.protocol.produce_request import partition_budget, read_with_record_views
from kafkalite.protocol.request_guard import check_body, request_walker
from kafkalite.protocol.wire import ApiKey, frame_response

_Convert = Callable[[Any], Any]
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _error_code(value: Any) -> Any:
    return value if isinstance(value, ErrorCode) else ErrorCode(value)


def _timedelta(value: Any) -> Any:
    return value if isinstance(value, datetime.timedelta) else datetime.timedelta(milliseconds=value)


def _datetime(value: Any) -> Any:
    if value is None or isinstance(value, datetime.datetime):
        return value
    return None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)


_CONVERTERS: dict[str, _Convert] = {
    "error_code": _error_code,
    "timedelta_i32": _timedelta,
    "timedelta_i64": _timedelta,
    "datetime_i64": _datetime,
}


MAX_ERROR_MESSAGE_CHARS = 1024


def _error_message(value: Any) -> Any:
    """Error messages are the broker's own words, but they quote what a request sent (a topic name may be 32,767
    characters): cut them so that every answer fits the int16-length string it travels in."""
    if value is not None and len(value) > MAX_ERROR_MESSAGE_CHARS:
        return value[: MAX_ERROR_MESSAGE_CHARS - 1] + "…"
    return value


_converters_by_class: dict[type[Any], dict[str, _Convert | None]] = {}


def _field_converters(cls: type[Any]) -> dict[str, _Convert | None]:
    """Field name → converter (None: kio takes the plain value as is) for one kio class, computed once."""
    table = _converters_by_class.get(cls)
    if table is None:
        table = {
            f.name: _error_message if f.name == "error_message" else _CONVERTERS.get(f.metadata.get("kafka_type", ""))
            for f in dataclasses.fields(cls)
        }
        _converters_by_class[cls] = table
    return table


def build(cls: type[Any], fields: dict[str, Any]) -> Any:
    """An instance of kio class `cls` from the given fields that it has, converted to kio's types."""
    table = _field_converters(cls)
    kwargs: dict[str, Any] = {}
    for name, value in fields.items():
        if name in table:
            convert = table[name]
            kwargs[name] = value if convert is None else convert(value)
    return cls(**kwargs)


class ApiSchema:
    """The request and response classes of one (api_key, version), and their codecs."""

    __slots__ = (
        "_module",
        "_plan",
        "_read",
        "_read_response",
        "_write",
        "api_key",
        "request_type",
        "response_header_version",
        "response_type",
        "version",
    )

    def __init__(self, api_key: int, version: int) -> None:
        self.api_key = api_key
        self.version = version
        self.request_type: type[Any] = load_request_schema(api_key, version)
        response_type: type[Any] = load_response_schema(api_key, version)
        self.response_type = response_type
        self._read_response: Callable[[bytes, int], tuple[Any, int]] | None = None
        self._module = sys.modules[response_type.__module__]
        self.response_header_version: int = response_type.__header_schema__.__version__
        self._read = entity_reader(self.request_type)
        self._plan = request_walker(api_key, version)
        self._write = entity_writer(response_type)

    @property
    def request_header_version(self) -> int:
        return int(self.request_type.__header_schema__.__version__)

    def decode(self, frame: bytes | memoryview, offset: int) -> Any:
        """The request body starting at `offset`; bytes after it are ignored, as Kafka does.

        kio refuses tagged fields it does not know (Kafka would skip them); such a body is a `ProtocolError` here.
        Every length and count in the body is first checked against the frame (`request_guard`): kio's native
        reader allocates by the count the client sent, and a failed allocation aborts the process.

        A large frame comes as a read-only `memoryview` (`wire.FrameBuffer`); a Produce read with its records left in
        the frame keeps views of it, and whatever kio reads gets a `bytes` copy of it.
        """
        budget = partition_budget(len(frame) - offset) if self.api_key == ApiKey.PRODUCE else 0
        if not budget and type(frame) is not bytes:
            frame = bytes(frame)
        try:
            check_body(self._plan, frame, offset)
        except ProtocolError as e:
            raise ProtocolError(f"undecodable api_key={self.api_key} v{self.version} body: {e}") from e
        try:
            if budget:
                viewed = read_with_record_views(frame, offset, self.request_type, budget)
                if viewed is not None:
                    return viewed
                if type(frame) is not bytes:
                    frame = bytes(frame)
            request, _ = self._read(frame, offset)
        except (SerialError, ValueError, OverflowError, KeyError) as e:  # kio: KeyError for an unknown tagged field
            raise ProtocolError(f"undecodable api_key={self.api_key} v{self.version} body: {e}") from e
        return request

    def build(self, class_name: str, **fields: Any) -> Any:
        """A response-side kio class of this version, by name (`"ProduceResponse"`, `"PartitionProduceResponse"`)."""
        return build(getattr(self._module, class_name), fields)

    def has_field(self, class_name: str, field: str) -> bool:
        """Whether this version's response-side class `class_name` has `field`."""
        return field in _field_converters(getattr(self._module, class_name))

    def encode_body(self, response: Any) -> bytes:
        """The response body (no header) as kio writes it."""
        buffer = io.BytesIO()
        self._write(buffer, response)
        return buffer.getvalue()

    def decode_response_body(self, body: bytes) -> Any:
        """A response body (as `encode_body` wrote it) read back into its kio class."""
        if self._read_response is None:
            self._read_response = entity_reader(self.response_type)
        response, _ = self._read_response(body, 0)
        return response

    def encode_response(self, correlation_id: int, response: Any) -> bytes:
        """The response frame; `response` is a kio response, or its body already encoded (`bytes`)."""
        body = response if type(response) is bytes else self.encode_body(response)
        return frame_response(correlation_id, self.response_header_version, body)


@functools.cache
def api_schema(api_key: int, version: int) -> ApiSchema:
    """The cached schema of (api_key, version); raises kio's `KioIndexError` when kio has no such message."""
    return ApiSchema(api_key, version)
