"""Shaping a request and its answer by the authorizer's `Verdict`, for any API, from kio's message classes.

`dispatch` asks the authorizer once per request (`Authorizer.check_request`) and, unless everything is allowed,
hands the request here:

- refused as a whole: the handler does not run; the answer is `refusal(...)`: the response class of that version
  with the error code in every `error_code` field, and each request entry echoed (names, partition indexes) in the
  response list that answers it, so every client finds its own topics and partitions with the error, as Kafka's
  `getErrorResponse` does;
- refused entries: they are taken out of the request's list, the handler serves the rest, and an echoed entry with
  the error code is added to the answer for each refused one;
- hidden entries (Metadata of all topics, ListGroups): removed from the answer's listing;
- disabled flags (Metadata's allow_auto_topic_creation without CREATE): set False in the request.

Echo rules: a response field takes the value of the request entry's field of the same name, or of its synonym
(`topic`/`name`, `partition_index`/`partition`/`index`); a plain string entry (DeleteTopics v0-5, DescribeGroups,
DeleteGroups) is the entry's name, an int entry its partition index. A response list is paired with the request
list of the same name, or with the request's only list of entries. Other fields keep kio's default, or Kafka's
"unknown" value (-1 for numbers, empty or null for strings and bytes).
"""

from __future__ import annotations

import dataclasses
import typing
import uuid
from collections.abc import Callable
from typing import Any, Final

from kafkalite.protocol.fetch_response import FIRST_TOPIC_ID_VERSION
from kafkalite.protocol.messages import ApiSchema, build
from kafkalite.security.authorizer import Verdict
from kafkalite.security.operations import RULES, item_name
from kafkalite.security.principal import Principal
from kafkalite.security.service import Security
from kafkalite.server.zero_copy import FetchAnswer, Fetched, failed_partition

_SYNONYMS: Final = {
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
    "partition_index": ("partition_index", "partition", "index"),
    "index": ("index", "partition_index", "partition"),
    "partition": ("partition", "partition_index", "index"),
}
_NAME_FIELDS: Final = ("name", "topic", "group_id", "transactional_id", "resource_name")
_PARTITION_FIELDS: Final = ("partition_index", "index", "partition")


_hints_by_class: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    """A kio class's resolved field annotations, computed once per class."""
    hints = _hints_by_class.get(cls)
    if hints is None:
        hints = _hints_by_class[cls] = typing.get_type_hints(cls)
    return hints


def _entity_of(annotation: Any) -> type[Any] | None:
    """The entity class of a `tuple[Entity, ...]` (optionally `| None`) annotation, else None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(candidate) is tuple:
            (inner, *_) = typing.get_args(candidate)
            return inner if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None
    return None


def _nullable(annotation: Any) -> bool:
    return type(None) in typing.get_args(annotation)


def _lists(entity: Any) -> dict[str, tuple[Any, ...]]:
    """The list fields of a request-side entity (entries may be entities, strings or ints)."""
    if not dataclasses.is_dataclass(entity):
        return {}
    return {f.name: v for f in dataclasses.fields(entity) if isinstance(v := getattr(entity, f.name), tuple)}


def _source_value(source: Any, name: str) -> Any:
    if isinstance(source, str):
        return source if name in _NAME_FIELDS else dataclasses.MISSING
    if isinstance(source, int):
        return source if name in _PARTITION_FIELDS else dataclasses.MISSING
    for attribute in _SYNONYMS.get(name, (name,)):
        if source is not None and hasattr(source, attribute):
            return getattr(source, attribute)
    return dataclasses.MISSING


def _unknown(annotation: Any, kafka_type: str) -> Any:
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return 0
    if _nullable(annotation) or kafka_type in ("datetime_i64", "records"):
        return None
    if kafka_type in ("int8", "int16", "int32", "int64", "uint16", "uint32", "float64"):
        return -1
    if kafka_type == "bool":
        return False
    if kafka_type == "string":
        return ""
    if kafka_type == "bytes":
        return b""
    if kafka_type == "uuid":
        return uuid.UUID(int=0)
    if typing.get_origin(annotation) is tuple:
        return ()
    if dataclasses.is_dataclass(annotation):
        return echo(annotation, None, 0, {})  # type: ignore[arg-type]
    return None


def echo(cls: type[Any], source: Any, code: int, pairs: dict[str, str]) -> Any:
    """An instance of response-side `cls` answering request-side `source` with error `code` (module docstring)."""
    hints = _hints(cls)
    source_lists = _lists(source)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        annotation = hints[f.name]
        entity = _entity_of(annotation)
        if f.name == "error_code":
            fields[f.name] = code
        elif entity is not None:
            paired = pairs.get(f.name, f.name)
            entries = source_lists.get(paired)
            if entries is None and len(source_lists) == 1:
                (entries,) = source_lists.values()
            fields[f.name] = [echo(entity, entry, code, {}) for entry in entries or ()]
        elif (value := _source_value(source, f.name)) is not dataclasses.MISSING and not isinstance(value, tuple):
            fields[f.name] = value
        elif f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        else:
            fields[f.name] = _unknown(annotation, f.metadata.get("kafka_type", ""))
    return build(cls, fields)


def _pairs(api_key: int) -> dict[str, str]:
    """Response list → request list, from the operation table's item rules."""
    return {r.items.answers: r.items.field for r in RULES.get(api_key, ()) if r.items is not None}


def refusal(schema: ApiSchema, request: Any, code: int) -> Any:
    """The whole-request refusal: the response of this version with `code` everywhere, the request echoed."""
    return echo(schema.response_type, request, code, _pairs(schema.api_key))


def _narrowed(request: Any, verdict: Verdict, topic_names: Callable[[Any], str | None]) -> Any:
    changes: dict[str, Any] = {flag: False for flag in verdict.disabled if hasattr(request, flag)}
    for items, refused in verdict.items.items():
        entries = getattr(request, items.field, None) or ()
        changes[items.field] = tuple(e for e in entries if item_name(e, topic_names) not in refused)
    return dataclasses.replace(request, **changes) if changes else request


def _completed(
    schema: ApiSchema,
    response: Any,
    request: Any,
    verdict: Verdict,
    topic_names: Callable[[Any], str | None],
    visible: Callable[[str, Any], bool],
) -> Any:
    if type(response) is bytes:  # a body written without kio (an accepted Produce): decode it to add to it
        response = schema.decode_response_body(response)
    elif type(response) is FetchAnswer:  # a Fetch answer not written yet: its refused topics added as plain values
        return _completed_fetch(schema, response, request, verdict, topic_names)
    hints = _hints(type(response))
    changes: dict[str, Any] = {}
    for items, refused in verdict.items.items():
        entity = _entity_of(hints.get(items.answers))
        if entity is None:
            continue
        entries = getattr(request, items.field, None) or ()
        added = [echo(entity, e, refused[n], {}) for e in entries if (n := item_name(e, topic_names)) in refused]
        changes[items.answers] = (*changes.get(items.answers, getattr(response, items.answers)), *added)
    for listing, _, _ in verdict.hidden:
        entries = changes.get(listing, getattr(response, listing, None))
        if entries is not None:
            changes[listing] = tuple(e for e in entries if visible(listing, item_name(e, topic_names)))
    return dataclasses.replace(response, **changes) if changes else response


def _completed_fetch(
    schema: ApiSchema, answer: FetchAnswer, request: Any, verdict: Verdict, topic_names: Callable[[Any], str | None]
) -> FetchAnswer:
    """A Fetch answer with each refused topic added, every partition of it failed with the refusal's code (Fetch
    hides nothing: its only rule refuses topics one by one)."""
    by_id = schema.version >= FIRST_TOPIC_ID_VERSION
    added: list[tuple[str | uuid.UUID | None, list[Fetched]]] = []
    for items, refused in verdict.items.items():
        for entry in getattr(request, items.field, None) or ():
            if (name := item_name(entry, topic_names)) in refused:
                failed = [failed_partition(p.partition, refused[name]) for p in entry.partitions]
                added.append((entry.topic_id if by_id else entry.topic, failed))
    return answer.with_topics(added)


def narrowed(request: Any, verdict: Verdict, topic_names: Callable[[Any], str | None]) -> Any:
    """The request without its refused entries and with its disabled flags off."""
    return _narrowed(request, verdict, topic_names)


def completed(
    schema: ApiSchema,
    response: Any,
    request: Any,
    verdict: Verdict,
    security: Security,
    principal: Principal,
    host: str,
    topic_names: Callable[[Any], str | None],
) -> Any:
    """The handler's answer (kio response or encoded body) with the refused entries added and hidden ones removed."""
    hidden = {listing: (resource, operation) for listing, resource, operation in verdict.hidden}

    def visible(listing: str, name: Any) -> bool:
        resource, operation = hidden[listing]
        return isinstance(name, str) and security.authorizer.authorize(principal, host, operation, resource, name)

    return _completed(schema, response, request, verdict, topic_names, visible)
