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

The Fetch handler answers a `FetchAnswer` (`server.zero_copy`) rather than kio's classes: its frame is written by
`protocol.fetch_response`, and when records are ranges of segment files it is a `SplicedFrame`, which the connection
sends with `sendfile`.

A handler whose answer must wait for the disk (Produce with acks=-1) returns `AfterDurable(awaitable)` once its state
change is made: `dispatch` then starts a task that awaits it and encodes the response, and the connection loop writes
that answer in its place in the request order while it goes on with the next request (see `server.server`). The wait
starts when the request is handled (the task's first step runs a loop turn or two later), not when the answers
before it have been written: its fsync target is then the log as this request left it, or a few appends later, so
the round under way or the next one covers it, together with every request that arrived meanwhile (group commit
across a connection's pipelined requests, and across connections).

Security, when the connection has a `Session`: a request its SASL state does not allow yet closes the connection;
with an authorizer configured, `Authorizer.check_request` is called once per request and its verdict shapes the
request and answer (`server.authorization`), so no handler checks ACLs; with a byte-rate quota configured, Produce
and Fetch are counted against it and a throttled answer carries throttle_time_ms (`_with_quota`). Without any of
these the request path is the one above, plus two attribute checks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Final, NamedTuple

from kafkalite.broker import Broker
from kafkalite.errors import ProtocolError, UnknownTopicError
from kafkalite.protocol.messages import ApiSchema, api_schema
from kafkalite.protocol.wire import (
    ApiKey,
    RequestHeader,
    api_versions_fallback,
    decode_request_header,
    peek_request,
)
from kafkalite.security.quotas import FETCH_RATE, PRODUCE_RATE, REQUEST_PERCENTAGE
from kafkalite.security.service import Security
from kafkalite.security.session import Session
from kafkalite.server.authorization import completed, narrowed, refusal
from kafkalite.server.mutation_quota import STRICT_SINCE, throttled, with_mutation_quota
from kafkalite.server.zero_copy import FetchAnswer, SplicedFrame
from kafkalite.stats import ApiStats

log = logging.getLogger("kafkalite.server")

Handler = Callable[["RequestContext", Any], Awaitable[Any]]

PendingResponse = asyncio.Task[bytes]
"""A response frame not due yet, already under way: the connection awaits it, in request order, before writing it."""

Answer = bytes | SplicedFrame | PendingResponse | None
"""What `dispatch` hands the connection: a frame, a frame part of which is sent from segment files (a Fetch answer,
see `server.zero_copy`), a frame not due yet, or nothing."""


class AfterDurable:
    """A handler's answer that may only be sent once `response` (an awaitable of the kio response) has returned.

    The handler has made every state change before returning this; `response` only waits (for an fsync) and builds.
    A plain class rather than a frozen dataclass: one is built per acks=all Produce request, and a frozen dataclass's
    `__init__` stays interpreted in the compiled form of this module.
    """

    def __init__(self, response: Awaitable[Any]) -> None:
        self.response = response


@dataclass(frozen=True, slots=True)
class Registration:
    api_key: int
    versions: range
    handler: Handler

    @property
    def name(self) -> str:
        """Kafka's name for the API ("Produce", "FindCoordinator"), as its request metrics label it."""
        try:
            words = ApiKey(self.api_key).name
        except ValueError:  # not named in ApiKey: the handler is named after its API
            words = self.handler.__name__
        return "".join(word.capitalize() for word in words.lower().split("_"))


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


# `Broker`, `Security` and `Session` are imported at run time, not only for the type checker: the compiled form of this
# module (`protocol.native`) resolves a named tuple's field types when it defines the class.
class RequestContext(NamedTuple):
    """What a handler gets besides its request: the broker, this server, the request's header and schema, and the
    connection's client and security state. A named tuple (immutable, and built per request faster than a frozen
    dataclass)."""

    broker: Broker
    server: ServerInfo
    header: RequestHeader
    schema: ApiSchema
    client_host: str = ""
    session: Session | None = None  # the connection's security state (None: a bare dispatch, as in unit tests)
    security: Security | None = None

    @property
    def version(self) -> int:
        return self.schema.version

    def build(self, class_name: str, **fields: Any) -> Any:
        """A response-side kio class of this request's version; see `ApiSchema.build`."""
        return self.schema.build(class_name, **fields)


def _context(
    broker: Broker,
    server: ServerInfo,
    header: RequestHeader,
    schema: ApiSchema,
    client_host: str,
    session: Session | None,
    security: Security | None,
) -> RequestContext:
    """`RequestContext(...)` without a call to the named tuple's `__new__`, which is Python code even in the compiled
    form of this module (about a thousand instructions a request)."""
    return tuple.__new__(RequestContext, (broker, server, header, schema, client_host, session, security))


async def dispatch(
    broker: Broker,
    server: ServerInfo,
    frame: bytes | memoryview,
    client_host: str = "",
    *,
    session: Session | None = None,
    security: Security | None = None,
) -> Answer:
    """Decode one request frame, run its handler and return the response frame (None: no response is due), or, when
    the handler answered `AfterDurable`, a task already started that returns the frame once the answer may leave.

    Raises `ProtocolError` for unknown API keys, unsupported versions (except ApiVersions, which gets the v0
    fallback reply), undecodable bytes, and requests the connection's SASL state does not allow yet.
    """
    began = perf_counter()
    peeked = api_key, version, correlation_id = peek_request(frame)
    registration = _registry.get(api_key)
    if registration is None:
        raise ProtocolError(f"unknown api_key {api_key} (v{version})")
    if session is not None and not session.allows(api_key):
        state = "after its session expired" if session.expired else "before SASL authentication"
        raise ProtocolError(f"api_key {api_key} sent {state}")
    if version not in registration.versions:
        if api_key == ApiKey.API_VERSIONS:
            return api_versions_fallback(correlation_id, supported_ranges())
        raise ProtocolError(f"unsupported version {version} of api_key {api_key} (serving {registration.versions})")
    schema = api_schema(api_key, version)
    header, offset = decode_request_header(frame, schema.request_header_version, peeked)
    request = schema.decode(frame, offset)
    stats = broker.stats.requests.apis.get(api_key) or broker.stats.requests.api(api_key, registration.name)
    stats.requests += 1
    ctx = _context(broker, server, header, schema, client_host, session, security)
    if session is None or security is None:
        response = await registration.handler(ctx, request)
    elif api_key in STRICT_SINCE and security.quotas.mutations_enforced:
        handler = registration.handler
        response = await with_mutation_quota(
            ctx, request, session, security, lambda r: _handle(ctx, handler, r, session, security), _topic_names(ctx)
        )
    elif not security.authorizer.enabled:
        response = await registration.handler(ctx, request)
    else:
        response = await _authorized(ctx, registration.handler, request, session, security)
    if security is None or session is None:
        pass
    elif security.quotas.request_time_enforced and api_key not in _NOT_TIMED:
        # request_percentage: the loop time this request's handler took, counted against the client's share
        now = asyncio.get_running_loop().time()
        cost = (perf_counter() - began) * 100  # percent of one second
        throttle_ms = security.quotas.record(
            session.principal.name, header.client_id or "", REQUEST_PERCENTAGE, cost, now
        )
        session.mute(throttle_ms, now)
        if api_key in _QUOTA_KEYS and security.quotas.enforced:
            answer = _with_quota(ctx, frame, response, session, security, stats, began, throttle_ms)
            if answer is None or isinstance(answer, (bytes, SplicedFrame)):
                stats.latency.observe(perf_counter() - began)
            return answer
        if throttle_ms and response is not None:
            response = _later_throttled(schema, response, throttle_ms)
    elif api_key in _QUOTA_KEYS and security.quotas.enforced:
        answer = _with_quota(ctx, frame, response, session, security, stats, began)
        if answer is None or isinstance(answer, (bytes, SplicedFrame)):
            stats.latency.observe(perf_counter() - began)
        return answer
    if response is None:
        stats.latency.observe(perf_counter() - began)
        return None
    if type(response) is AfterDurable:
        return _when_ready(schema, correlation_id, response.response, stats, began)
    count_errors(response, stats.errors)
    encoded = encode(schema, correlation_id, response)
    stats.latency.observe(perf_counter() - began)
    return encoded


def encode(schema: ApiSchema, correlation_id: int, response: Any) -> bytes | SplicedFrame:
    """The response frame; a Fetch answer with records in segment files becomes a `SplicedFrame` (`zero_copy`)."""
    if type(response) is FetchAnswer:
        return response.frame(correlation_id, schema)
    return schema.encode_response(correlation_id, response)


def _when_ready(
    schema: ApiSchema, correlation_id: int, response: Awaitable[Any], stats: ApiStats, began: float
) -> PendingResponse:
    """The answer frame of an `AfterDurable` response, as a task started now: the wait for the disk begins while the
    connection goes on reading (see the module's docstring)."""
    return asyncio.get_running_loop().create_task(_encode_when_ready(schema, correlation_id, response, stats, began))


async def _encode_when_ready(
    schema: ApiSchema, correlation_id: int, response: Awaitable[Any], stats: ApiStats, began: float
) -> bytes:
    answer = await response
    count_errors(answer, stats.errors)
    encoded = schema.encode_response(correlation_id, answer)
    stats.latency.observe(perf_counter() - began)
    return encoded


# Per response class: its error-code fields, and the fields holding tuples (which may hold nested entities).
_error_plans: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def count_errors(response: Any, counts: dict[int, int]) -> None:
    """Add every non-zero `error_code` of a kio response (at any depth) to `counts`: Kafka's ErrorsPerSec.

    A pre-encoded answer (`bytes`: the Produce answer `protocol.produce_response` writes) has no error and is
    skipped; a `FetchAnswer` lists its own. Each class's fields are looked up once, so the walk is a few attribute
    reads per entity of the answer.
    """
    if type(response) is bytes:
        return
    if type(response) is FetchAnswer:
        for code in response.error_codes():
            counts[code] = counts.get(code, 0) + 1
        return
    plan = _error_plans.get(type(response))
    if plan is None:
        plan = _error_plans[type(response)] = _plan(response)
    errors, children = plan
    for name in errors:
        code = getattr(response, name)
        if code:
            code = int(code)
            counts[code] = counts.get(code, 0) + 1
    for name in children:
        for child in getattr(response, name) or ():
            count_errors(child, counts)


def _plan(entity: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(error-code fields, fields typed as a tuple of entities, nullable or not) of a kio entity's class."""
    if not dataclasses.is_dataclass(entity):
        return (), ()
    errors: list[str] = []
    children: list[str] = []
    for field in dataclasses.fields(entity):
        if field.name == "error_code":
            errors.append(field.name)
        union = typing.get_origin(field.type) in (typing.Union, types.UnionType)
        for option in typing.get_args(field.type) if union else (field.type,):  # `tuple[X, ...] | None`: each
            if typing.get_origin(option) is tuple and any(dataclasses.is_dataclass(a) for a in typing.get_args(option)):
                children.append(field.name)
                break
    return tuple(errors), tuple(children)


_QUOTA_KEYS: Final = frozenset((ApiKey.PRODUCE, ApiKey.FETCH))
_NOT_TIMED: Final = frozenset((ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE))
"""Requests a client needs before it can be anyone: never counted against request_percentage."""


def _later_throttled(schema: ApiSchema, response: Any, throttle_ms: int) -> Any:
    """`response` (or, for `AfterDurable`, the answer it waits for) with throttle_time_ms at least `throttle_ms`."""
    if type(response) is AfterDurable:
        pending = response.response

        async def throttled_when_durable() -> Any:
            return _throttled(schema, await pending, throttle_ms)

        return AfterDurable(throttled_when_durable())
    return _throttled(schema, response, throttle_ms)


def _with_quota(
    ctx: RequestContext,
    frame: bytes | memoryview,
    response: Any,
    session: Session,
    security: Security,
    stats: ApiStats,
    began: float,
    request_throttle_ms: int = 0,
) -> Answer:
    """Count the request (Produce: its frame) or answer (Fetch) against the client's byte-rate quota; over it, the
    answer carries throttle_time_ms and the connection reads nothing more for that long (KIP-219). The answer's
    throttle time is at least `request_throttle_ms` (the request-time quota's)."""
    schema, correlation_id = ctx.schema, ctx.header.correlation_id
    user, client_id = session.principal.name, ctx.header.client_id or ""
    now = asyncio.get_running_loop().time()
    if schema.api_key == ApiKey.PRODUCE:
        throttle_ms = security.quotas.record(user, client_id, PRODUCE_RATE, len(frame), now)
        session.mute(throttle_ms, now)
        throttle_ms = max(throttle_ms, request_throttle_ms)
        if response is None:
            return None
        if type(response) is AfterDurable:
            pending = response.response

            async def throttled_when_durable() -> Any:
                return _throttled(schema, await pending, throttle_ms)

            return _when_ready(schema, correlation_id, throttled_when_durable(), stats, began)
        count_errors(response, stats.errors)
        return schema.encode_response(correlation_id, _throttled(schema, response, throttle_ms))
    count_errors(response, stats.errors)
    encoded = encode(schema, correlation_id, response)
    throttle_ms = security.quotas.record(user, client_id, FETCH_RATE, len(encoded), now)
    session.mute(throttle_ms, now)
    throttle_ms = max(throttle_ms, request_throttle_ms)
    if not throttle_ms:
        return encoded
    return encode(schema, correlation_id, _throttled(schema, response, throttle_ms))


def _throttled(schema: ApiSchema, response: Any, throttle_ms: int) -> Any:
    """`response` with throttle_time_ms at least `throttle_ms` (answers without that field are left as they are)."""
    if not throttle_ms:
        return response
    if type(response) is FetchAnswer:
        return response.throttled(throttle_ms)
    if type(response) is bytes:
        response = schema.decode_response_body(response)
    return throttled(response, throttle_ms)


def _topic_names(ctx: RequestContext) -> Callable[[Any], str | None]:
    """Topic id → name (None when unknown), for requests that name topics by id."""

    def topic_names(topic_id: Any) -> str | None:
        try:
            return ctx.broker.topic_by_id(topic_id).name
        except (UnknownTopicError, TypeError):
            return None

    return topic_names


async def _handle(ctx: RequestContext, handler: Handler, request: Any, session: Session, security: Security) -> Any:
    """The handler, through the authorizer when one is configured."""
    if not security.authorizer.enabled:
        return await handler(ctx, request)
    return await _authorized(ctx, handler, request, session, security)


async def _authorized(ctx: RequestContext, handler: Handler, request: Any, session: Session, security: Security) -> Any:
    """The one authorization check of a request (see `server.authorization` for how a verdict shapes the answer)."""

    topic_names = _topic_names(ctx)
    principal, host = session.principal, session.host
    verdict = security.authorizer.check_request(principal, host, ctx.schema.api_key, request, topic_names)
    if verdict.allowed:
        return await handler(ctx, request)
    if verdict.refused is not None:
        if getattr(request, "acks", None) == 0:
            raise ProtocolError("acks=0 produce refused by the authorizer; closing the connection to signal it")
        return refusal(ctx.schema, request, verdict.refused)
    response = await handler(ctx, narrowed(request, verdict, topic_names))
    if response is None:
        if verdict.items:
            raise ProtocolError("acks=0 produce refused by the authorizer; closing the connection to signal it")
        return None

    def complete(answer: Any) -> Any:
        return completed(ctx.schema, answer, request, verdict, security, principal, host, topic_names)

    if type(response) is AfterDurable:
        pending = response.response

        async def complete_when_durable() -> Any:
            return complete(await pending)

        return AfterDurable(complete_when_durable())
    return complete(response)


async def failed_authentication(session: Session, security: Security) -> None:
    """What every refused login gets: a WARNING line with the peer, the mechanism and the user name claimed (never
    a password or token; rate-limited by `Security.failed_logins`), a delay (connection.failed.authentication.delay.ms)
    so that guessing is slow, then the connection closes after the answer. The client gets no hint about which part
    was wrong."""
    security.failed_logins.warning(
        "Failed SASL authentication from %s: principal %s, mechanism %s",
        session.peer,
        session.claimed_principal,
        session.mechanism or "none",
    )
    session.close_after_answer = True
    await asyncio.sleep(security.settings.failed_authentication_delay_ms / 1000)
