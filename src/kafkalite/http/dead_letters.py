"""Dead-letter pages: every source topic with a `<topic>.DLQ` (`/dead-letters`), and one topic's dead letters
(`/dead-letters/<topic>`) with their error headers, a dry-run preview of a replay (`?preview=1`) and the replay.

Counts come from offsets: letters held = the DLQ's end − start offsets, waiting = end − the replay position
(`DeadLetterQueue.replay_position`). Pages read one window of letters, never a whole DLQ. The replay itself is the
broker's (`DeadLetterQueue.replay`), which republishes each letter not replayed yet and records its progress.

With a login, the list shows the sources whose dead-letter topic the principal may DESCRIBE, a source's letters need
READ on its dead-letter topic, and a replay needs that READ plus WRITE on every topic the waiting letters go back to
(checked on the dry run before anything is written).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kafkalite.broker import Broker, DeadLetter, dead_letter_topic
from kafkalite.broker.dead_letter_format import DLQ_SUFFIX
from kafkalite.http.auth import Access
from kafkalite.http.messages import DEFAULT_LIMIT, MAX_LIMIT, int_param
from kafkalite.http.render import as_hex, as_json, as_text
from kafkalite.http.server import access_of, console_of, page, redirect
from kafkalite.security.acls import Operation, ResourceType

PREVIEW_LIMIT = 50


def dead_letter_sources(broker: Broker, access: Access) -> list[str]:
    """Source topics that have a dead-letter topic `access` may DESCRIBE."""
    return sorted(
        name[: -len(DLQ_SUFFIX)]
        for name in list(broker.topics)
        if name.endswith(DLQ_SUFFIX)
        and len(name) > len(DLQ_SUFFIX)
        and access.may(Operation.DESCRIBE, ResourceType.TOPIC, name)
    )


def counts(broker: Broker, source: str) -> dict[str, Any]:
    dlq = broker.topic(dead_letter_topic(source))
    held = waiting = 0
    partitions = []
    for partition in dlq.partitions:
        position = broker.dead_letters.replay_position(source, partition.index)
        pending = max(0, partition.high_watermark - position)
        held += partition.message_count
        waiting += pending
        partitions.append(
            {
                "index": partition.index,
                "start": partition.log_start_offset,
                "end": partition.high_watermark,
                "replayed_to": position,
                "pending": pending,
            }
        )
    return {"source": source, "dlq": dlq.name, "held": held, "pending": waiting, "partitions": partitions}


def shown(letter: DeadLetter) -> dict[str, Any]:
    pretty = as_json(letter.value)
    return {
        "dlq_partition": letter.dlq_partition,
        "dlq_offset": letter.dlq_offset,
        "original_topic": letter.original_topic,
        "original_partition": letter.original_partition,
        "original_offset": letter.original_offset,
        "original_timestamp": letter.original_timestamp,
        "exception_class": letter.exception_class,
        "exception_message": letter.exception_message,
        "consumer_group": letter.consumer_group,
        "key": as_text(letter.key),
        "value": pretty if pretty is not None else as_text(letter.value),
        "value_hex": as_hex(letter.value, 512),
        "headers": [(name, as_text(value)) for name, value in letter.headers],
    }


async def list_sources(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    rows = [counts(broker, source) for source in dead_letter_sources(broker, access_of(request))]
    return page(request, "dead_letters.html", title="Dead letters", section="dlq", sources=rows)


def _source(broker: Broker, request: web.Request) -> str:
    source = request.match_info["topic"]
    access_of(request).require(Operation.READ, ResourceType.TOPIC, dead_letter_topic(source))
    if dead_letter_topic(source) not in broker.topics:
        raise web.HTTPNotFound(text=f"Topic {source!r} has no dead letters.")
    return source


async def show_source(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    source = _source(broker, request)
    summary = counts(broker, source)
    dlq = broker.topic(summary["dlq"])
    holding = [p.index for p in dlq.partitions if p.message_count]
    default = holding[0] if holding else 0  # with no partition asked for, the first that holds letters
    partition = min(max(int_param(request.query.get("partition"), default) or 0, 0), len(dlq.partitions) - 1)
    limit = min(max(int_param(request.query.get("limit"), DEFAULT_LIMIT) or DEFAULT_LIMIT, 1), MAX_LIMIT)
    target = dlq.partitions[partition]
    offset = int_param(request.query.get("offset"), None)
    start = (
        target.log_start_offset if offset is None else min(max(offset, target.log_start_offset), target.high_watermark)
    )
    letters = broker.dead_letters.read(source, partition, start, limit)
    following = letters[-1].dlq_offset + 1 if letters else target.high_watermark
    preview = None
    if request.query.get("preview"):  # exactly what a replay would do now: the letters, each to its group's topic
        waiting = await broker.dead_letters.replay(source, dry_run=True)
        preview = [{**shown(r.letter), "replay_to": r.topic} for r in waiting[:PREVIEW_LIMIT]]
    return page(
        request,
        "dead_letter_topic.html",
        title=f"Dead letters of {source}",
        section="dlq",
        summary=summary,
        partition=partition,
        partitions=len(dlq.partitions),
        letters=[shown(letter) for letter in letters],
        start=start,
        limit=limit,
        previous=max(target.log_start_offset, start - limit) if start > target.log_start_offset else None,
        following=following if following < target.high_watermark else None,
        preview=preview,
        preview_limit=PREVIEW_LIMIT,
    )


async def replay(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    source = _source(broker, request)
    access = access_of(request)
    for target in sorted({r.topic for r in await broker.dead_letters.replay(source, dry_run=True)}):
        access.require(Operation.WRITE, ResourceType.TOPIC, target)
    replayed = await broker.dead_letters.replay(source)
    targets = ", ".join(sorted({r.topic for r in replayed})) or source
    raise redirect(request, f"/dead-letters/{source}", f"Replayed {len(replayed)} dead letter(s) to {targets}.")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/dead-letters", list_sources)
    router.add_get("/dead-letters/{topic}", show_source)
    router.add_post("/dead-letters/{topic}/replay", replay)
