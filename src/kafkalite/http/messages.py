"""The message browser (`/topics/<name>/messages`) and the test-message form that posts to it.

A page is a window of one partition: from a start offset (or the first offset at or after a time, through the
time index), at most `limit` records, decoded from the batches that hold them. With no position given it shows the
newest records. A filter (key, text or JSON field) scans forward at most `SCAN_LIMIT` records per page and says
where it stopped, so the next page carries on from there: no request ever reads a whole log, however long.

With a login, browsing needs READ on the topic (what a Fetch needs) and the test message WRITE (a Produce's),
checked before the topic is looked up.

Values are shown pretty-printed when they are JSON, else as text (`view=text`), or as a hexdump (`view=hex`).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from itertools import islice
from typing import Any

from aiohttp import web

from kafkalite.broker import Broker
from kafkalite.errors import InvalidRecordError, KafkaLiteError
from kafkalite.http.render import as_hex, as_json, as_text
from kafkalite.http.server import access_of, console_of, form_of, page, redirect
from kafkalite.protocol.records import Record
from kafkalite.security.acls import Operation, ResourceType

DEFAULT_LIMIT = 20
MAX_LIMIT = 200
SCAN_LIMIT = 10_000  # records a filtered page may look at
FILTERS = ("key", "text", "json")
VIEWS = ("auto", "text", "hex")


@dataclass(frozen=True, slots=True)
class Window:
    partition: int
    start: int  # first offset looked at
    next: int  # first offset after what was looked at
    log_start: int
    log_end: int
    records: list[Record]
    scanned: int


def parse_time(value: str) -> int:
    """Milliseconds since the epoch, from digits (ms) or an ISO date-time (UTC unless it names a zone)."""
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRecordError(f"time must be milliseconds or an ISO date-time, got {value!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return int(when.timestamp() * 1000)


def _json_path(document: Any, path: str) -> tuple[bool, Any]:
    node = document
    for part in path.split(".") if path else ():
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def matcher(kind: str, query: str) -> Any:
    """A predicate over records for the filter `kind` ("key": key equals; "text": value contains; "json":
    `path=value` or just `path`, on values that are JSON documents)."""
    if kind == "key":
        wanted = query.encode()
        return lambda record: record.key == wanted
    if kind == "text":
        needle = query.encode()
        return lambda record: record.value is not None and needle in record.value
    path, sep, expected = query.partition("=")
    path = path.strip()

    def json_match(record: Record) -> bool:
        if not record.value:
            return False
        try:
            document = json.loads(record.value)
        except (ValueError, UnicodeDecodeError):
            return False
        found, node = _json_path(document, path)
        if not found:
            return False
        if not sep:
            return True
        text = node if isinstance(node, str) else json.dumps(node)
        return bool(text == expected.strip())

    return json_match


def read_window(broker: Broker, topic: str, partition: int, start: int, limit: int, predicate: Any | None) -> Window:
    target = broker.partition(topic, partition)
    log_start, log_end = target.log_start_offset, target.high_watermark
    start = min(max(start, log_start), log_end)
    if predicate is None:
        records = broker.read_records(topic, partition, start, limit)
        following = records[-1].offset + 1 if records else log_end
        return Window(partition, start, following, log_start, log_end, records, len(records))
    matches: list[Record] = []
    position, scanned = start, 0
    for record in islice(broker.iter_records(topic, partition, start), SCAN_LIMIT):
        scanned += 1
        position = record.offset + 1
        if predicate(record):
            matches.append(record)
            if len(matches) == limit:
                break
    return Window(partition, start, position, log_start, log_end, matches, scanned)


def shown(record: Record, view: str) -> dict[str, Any]:
    pretty = as_json(record.value) if view == "auto" else None
    if view == "hex":
        body, kind = as_hex(record.value), "hex"
    elif pretty is not None:
        body, kind = pretty, "json"
    else:
        body, kind = as_text(record.value), "text"
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": as_text(record.key),
        "key_hex": as_hex(record.key, 256) if view == "hex" else None,
        "value": body,
        "kind": kind,
        "size": len(record.value or b""),
        "headers": [(name, as_text(value)) for name, value in record.headers],
    }


def int_param(value: str | None, default: int | None) -> int | None:
    if value is None or not value.strip():
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidRecordError(f"not a whole number: {value!r}") from None


async def browse(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    name = request.match_info["topic"]
    access_of(request).require(Operation.READ, ResourceType.TOPIC, name)
    topic = broker.topics.get(name)
    if topic is None:
        raise web.HTTPNotFound(text=f"There is no topic {name!r}.")
    query = request.query
    partition = int_param(query.get("partition"), 0) or 0
    limit = min(max(int_param(query.get("limit"), DEFAULT_LIMIT) or DEFAULT_LIMIT, 1), MAX_LIMIT)
    view = query.get("view", "auto") if query.get("view") in VIEWS else "auto"
    kind = query.get("filter", "text") if query.get("filter") in FILTERS else "text"
    needle = query.get("q", "")
    predicate = matcher(kind, needle) if needle else None
    target = broker.partition(name, partition)
    offset = int_param(query.get("offset"), None)
    at = query.get("time", "").strip()
    if offset is not None:
        start = offset
    elif at:
        start, _ = broker.list_offset(name, partition, parse_time(at))
        if start < 0:
            start = target.high_watermark
    else:
        back = SCAN_LIMIT if predicate is not None else limit
        start = max(target.log_start_offset, target.high_watermark - back)
    window = read_window(broker, name, partition, start, limit, predicate)
    step_back = SCAN_LIMIT if predicate is not None else limit
    return page(
        request,
        "messages.html",
        title=f"{name} · messages",
        section="topics",
        topic=name,
        partitions=len(topic.partitions),
        window=window,
        records=[shown(r, view) for r in window.records],
        previous=max(window.log_start, window.start - step_back) if window.start > window.log_start else None,
        following=window.next if window.next < window.log_end else None,
        limit=limit,
        view=view,
        filter_kind=kind,
        q=needle,
        time=at,
        offset_param=query.get("offset", ""),
        filtered=predicate is not None,
        scan_limit=SCAN_LIMIT,
    )


def parse_headers(text: str) -> list[tuple[str, bytes | None]]:
    headers: list[tuple[str, bytes | None]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        name, sep, value = raw.partition(":")
        if not sep or not name.strip():
            raise InvalidRecordError(f"header line {number} is not 'name: value': {raw!r}")
        headers.append((name.strip(), value.strip().encode()))
    return headers


async def produce(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    name = request.match_info["topic"]
    access_of(request).require(Operation.WRITE, ResourceType.TOPIC, name)
    form = await form_of(request)
    location = f"/topics/{name}/messages"
    try:
        if broker.topic(name).is_internal:
            raise InvalidRecordError(f"{name} is an internal topic: only the broker writes to it")
        partition = int_param(form.get("partition"), 0) or 0
        key = form.get("key", "")
        value = form.get("value", "")
        result = await broker.produce_record(
            name,
            partition,
            None if form.get("null_value") == "on" else value.encode(),
            key.encode() if key else None,
            parse_headers(form.get("headers", "")),
        )
    except KafkaLiteError as exc:
        raise redirect(request, location, f"Not produced: {exc}", "error") from None
    raise redirect(
        request,
        f"{location}?partition={partition}&offset={result.base_offset}",
        f"Produced to partition {partition} at offset {result.base_offset}.",
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/topics/{topic}/messages", browse)
    router.add_post("/topics/{topic}/messages", produce)
