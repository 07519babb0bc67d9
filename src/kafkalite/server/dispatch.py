"""Request dispatch: the handler registry, the context a handler gets, and frame → handler → frame.

Each handler module registers one coroutine with `@handles(api_key, versions=range(a, b))`. That registration is the
only list of what the server speaks: ApiVersions answers from it, and a request for an API key that is not
registered closes the connection (as Kafka does). Registering loads nothing from kio: a version's classes are
loaded on its first request and cached (`api_schema`), because importing kio's ~350 schema modules up front cost
seconds of start-up. `tests/server/test_dispatch.py` checks that kio has every registered version, so a range typo
fails in the unit tests rather than in front of a client.

A handler gets a `RequestContext` and the decoded kio request, and returns a kio response built with `ctx.build`
(or None when no response is due: Produce with acks=0). Kafka errors are fields of the response; an exception
escaping a handler means "close this connection" and is logged by the connection loop.

A handler whose answer must wait for the disk (Produce with acks=-1) returns `AfterDurable(awaitable)` once its state
change is made: `dispatch` then returns a coroutine that awaits it and encodes the response, and the connection loop
writes that answer in its place in the request order while it goes on with the next request (see `server.server`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite.errors import ProtocolError
from kafkalite.protocol.messages import ApiSchema, api_schema
from kafkalite.protocol.wire import (
    ApiKey,
    RequestHeader,
    api_versions_fallback,
    decode_request_header,
    peek_request,
)

if TYPE_CHECKING:
    from kafkalite.broker import Broker

Handler = Callable[["RequestContext", Any], Awaitable[Any]]

PendingResponse = Coroutine[Any, Any, bytes]
"""A response frame not due yet: the connection awaits it, in request order, before writing it."""


@dataclass(frozen=True, slots=True)
class AfterDurable:
    """A handler's answer that may only be sent once `response` (an awaitable of the kio response) has returned.

    The handler has made every state change before returning this; `response` only waits (for an fsync) and builds.
    """

    response: Awaitable[Any]


@dataclass(frozen=True, slots=True)
class Registration:
    api_key: int
    versions: range
    handler: Handler


_registry: dict[int, Registration] = {}


def handles(api_key: int, *, versions: range) -> Callable[[Handler], Handler]:
    """Register the decorated coroutine as the handler of `api_key` for `versions`."""

    def register(handler: Handler) -> Handler:
        if api_key in _registry:
            raise RuntimeError(f"api_key {api_key} is already handled by {_registry[api_key].handler.__qualname__}")
        if not versions:
            raise ValueError(f"empty version range for api_key {api_key}")
        _registry[api_key] = Registration(api_key, versions, handler)
        return handler

    return register


def supported_ranges() -> list[tuple[int, int, int]]:
    """(api_key, min_version, max_version) for every registered API, by api_key."""
    return [(r.api_key, r.versions[0], r.versions[-1]) for r in sorted(_registry.values(), key=lambda r: r.api_key)]


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What handlers need to know about the server they answer for (Metadata, FindCoordinator, DescribeCluster)."""

    node_id: int
    host: str
    port: int
    settings: tuple[tuple[str, str], ...] = ()  # the server's own broker settings (Kafka name, value): listeners, ...


@dataclass(frozen=True, slots=True)
class RequestContext:
    broker: Broker
    server: ServerInfo
    header: RequestHeader
    schema: ApiSchema
    client_host: str = ""

    @property
    def version(self) -> int:
        return self.schema.version

    def build(self, class_name: str, **fields: Any) -> Any:
        """A response-side kio class of this request's version; see `ApiSchema.build`."""
        return self.schema.build(class_name, **fields)


async def dispatch(
    broker: Broker, server: ServerInfo, frame: bytes, client_host: str = ""
) -> bytes | PendingResponse | None:
    """Decode one request frame, run its handler and return the response frame (None: no response is due), or, when
    the handler answered `AfterDurable`, a coroutine that returns the frame once the answer may leave.

    Raises `ProtocolError` for unknown API keys, unsupported versions (except ApiVersions, which gets the v0
    fallback reply) and undecodable bytes.
    """
    api_key, version, correlation_id = peek_request(frame)
    registration = _registry.get(api_key)
    if registration is None:
        raise ProtocolError(f"unknown api_key {api_key} (v{version})")
    if version not in registration.versions:
        if api_key == ApiKey.API_VERSIONS:
            return api_versions_fallback(correlation_id, supported_ranges())
        raise ProtocolError(f"unsupported version {version} of api_key {api_key} (serving {registration.versions})")
    schema = api_schema(api_key, version)
    header, offset = decode_request_header(frame, schema.request_header_version)
    request = schema.decode(frame, offset)
    response = await registration.handler(RequestContext(broker, server, header, schema, client_host), request)
    if response is None:
        return None
    if type(response) is AfterDurable:
        return _encode_when_ready(schema, correlation_id, response.response)
    return schema.encode_response(correlation_id, response)


async def _encode_when_ready(schema: ApiSchema, correlation_id: int, response: Awaitable[Any]) -> bytes:
    return schema.encode_response(correlation_id, await response)
