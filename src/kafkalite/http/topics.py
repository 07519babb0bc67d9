"""Topic pages: the list (`/topics`) with create, and one topic (`/topics/<name>`) with its partitions, configs
(edit) and delete (the topic's name must be typed to confirm).

Every figure comes from partition offsets and sizes the logs keep in memory; nothing here reads records.
With a login, the principal sees only topics it may DESCRIBE, and each write needs what Kafka's admin API needs
(CREATE on the cluster or the topic, ALTER_CONFIGS, DELETE; see `auth`); authorization is checked before a topic is
looked up, so a refusal never tells whether a topic exists. Writes go through the broker's own admin methods
(`create_topic`, `alter_topic_config`, `delete_topic`), which validate everything and raise `KafkaLiteError` with
a message the page shows.
"""

from __future__ import annotations

from aiohttp import web

from kafkalite.broker import Broker, Topic, dead_letter_topic
from kafkalite.errors import InvalidConfigError, KafkaLiteError
from kafkalite.http.auth import Forbidden
from kafkalite.http.server import access_of, console_of, form_of, page, redirect
from kafkalite.security.acls import Operation, ResourceType


def topic_row(topic: Topic) -> dict[str, object]:
    partitions = topic.partitions
    return {
        "name": topic.name,
        "internal": topic.is_internal,
        "partitions": len(partitions),
        "messages": sum(p.message_count for p in partitions),
        "size": sum(p.log.size_bytes for p in partitions),
        "retention_ms": topic.config.get("retention.ms"),
        "cleanup_policy": topic.config.get("cleanup.policy"),
    }


def parse_configs(text: str) -> dict[str, str]:
    """`key=value` lines (blank lines and `#` comments skipped) into a config mapping."""
    configs: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise InvalidConfigError(f"config line {number} is not key=value: {line!r}")
        configs[key.strip()] = value.strip()
    return configs


def parse_int(value: str, what: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise InvalidConfigError(f"{what} must be a whole number, got {value!r}") from None


async def list_topics(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    visible = access_of(request).visible(ResourceType.TOPIC, list(broker.topics))
    topics = sorted((broker.topics[name] for name in visible), key=lambda t: (t.is_internal, t.name))
    rows = [topic_row(t) for t in topics]
    return page(
        request,
        "topics.html",
        title="Topics",
        section="topics",
        topics=rows,
        default_partitions=broker.config.default_partitions,
    )


async def create_topic(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    form = await form_of(request)
    name = form.get("name", "").strip()
    access = access_of(request)
    if not access.may_create_topic(name):
        raise Forbidden(f"{access.principal} is not allowed CREATE on the cluster or on topic {name!r}")
    try:
        partitions = parse_int(form.get("partitions", "1"), "partitions")
        configs = parse_configs(form.get("configs", ""))
        await broker.create_topic(name, partitions, configs)
    except KafkaLiteError as exc:
        raise redirect(request, "/topics", f"Could not create {name!r}: {exc}", "error") from None
    raise redirect(request, f"/topics/{name}", f"Created topic {name} with {partitions} partition(s).")


def _topic(broker: Broker, request: web.Request, operation: Operation = Operation.DESCRIBE) -> Topic:
    """The topic the URL names, once the principal may do `operation` on it (404 when there is no such topic)."""
    name = request.match_info["topic"]
    access_of(request).require(operation, ResourceType.TOPIC, name)
    topic = broker.topics.get(name)
    if topic is None:
        raise web.HTTPNotFound(text=f"There is no topic {name!r}.")
    return topic


async def show_topic(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    topic = _topic(broker, request)
    partitions = [
        {
            "index": p.index,
            "start": p.log_start_offset,
            "end": p.high_watermark,
            "messages": p.message_count,
            "size": p.log.size_bytes,
            "bytes_in": p.bytes_in,
            "bytes_out": p.bytes_out,
        }
        for p in topic.partitions
    ]
    access = access_of(request)
    dlq = broker.topics.get(dead_letter_topic(topic.name))
    if dlq is not None and not access.may(Operation.DESCRIBE, ResourceType.TOPIC, dlq.name):
        dlq = None
    configs = None
    if access.may(Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, topic.name):
        configs = sorted(topic.config.describe(), key=lambda e: (e.is_default, e.name))  # what was set comes first
    return page(
        request,
        "topic.html",
        title=topic.name,
        section="topics",
        topic=topic_row(topic),
        topic_id=str(topic.topic_id),
        partitions=partitions,
        configs=configs,
        dead_letters=sum(p.message_count for p in dlq.partitions) if dlq is not None else None,
    )


async def alter_configs(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    topic = _topic(broker, request, Operation.ALTER_CONFIGS)
    form = await form_of(request)
    changes: dict[str, str | None] = {}
    for entry in topic.config.describe():
        if entry.read_only or f"cfg:{entry.name}" not in form:
            continue
        value = form[f"cfg:{entry.name}"].strip()
        if form.get(f"reset:{entry.name}") == "on" or not value:  # "reset" ticked, or the value cleared
            if not entry.is_default:
                changes[entry.name] = None
        elif value != (entry.value or ""):
            changes[entry.name] = value
    location = f"/topics/{topic.name}#configs"
    if not changes:
        raise redirect(request, location, "No config changed.")
    try:
        await broker.alter_topic_config(topic.name, changes)
    except InvalidConfigError as exc:
        raise redirect(request, location, f"Configs not changed: {exc}", "error") from None
    described = ", ".join(f"{k}={'(default)' if v is None else v}" for k, v in changes.items())
    raise redirect(request, location, f"Updated {described}.")


async def delete_topic(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    topic = _topic(broker, request, Operation.DELETE)
    form = await form_of(request)
    if form.get("confirm", "") != topic.name:
        raise redirect(request, f"/topics/{topic.name}#delete", "Type the topic's name to confirm the delete.", "error")
    await broker.delete_topic(topic.name)
    raise redirect(request, "/topics", f"Deleted topic {topic.name}.")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/topics", list_topics)
    router.add_post("/topics", create_topic)
    router.add_get("/topics/{topic}", show_topic)
    router.add_post("/topics/{topic}/configs", alter_configs)
    router.add_post("/topics/{topic}/delete", delete_topic)
