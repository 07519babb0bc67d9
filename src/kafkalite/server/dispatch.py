"""Request dispatch: the handler registry, the context a handler gets, and frame → handler → frame.

Each handler module registers one coroutine with `@handles(api_key, versions=range(a, b))`. That registration is the
only list of what the server speaks: ApiVersions answers from it, and a request for an API key that is not
registered closes the connection (as Kafka does). Registering checks that kio has the request and response classes
of every version named, so a range typo fails at import rather than in front of a client.

A handler gets a `RequestContext` and the decoded kio request, and returns a kio response built with `ctx.build`
(or None when no response is due: Produce with acks=0). Kafka errors are fields of the response; an exception
escaping a handler means "close this connection" and is logged by the connection loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
        for version in versions:
            api_schema(api_key, version)  # raises when kio lacks this version
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


async def dispatch(broker: Broker, server: ServerInfo, frame: bytes, client_host: str = "") -> bytes | None:
    """Decode one request frame, run its handler and return the response frame (None: no response is due).

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
    return None if response is None else schema.encode_response(correlation_id, response)
