"""DescribeConfigs (API key 32), versions 1-4.

v1 adds include_synonyms, config_source and synonyms (and is the oldest served) · v2 is v1 again · v3 adds
include_documentation, config_type and documentation · v4 is the first flexible version.

Answers come from the settings tables of `kafkalite.config`, as a single-broker Kafka 4 answers:
- TOPIC (2): every topic config Kafka defines, or the requested keys (unknown keys are left out, as Kafka leaves
  them out), with its value, source (DYNAMIC_TOPIC_CONFIG when set on the topic, STATIC_BROKER_CONFIG when the
  broker's default was set, else DEFAULT_CONFIG), type and documentation; synonyms, when asked for, run from the
  topic's own value through the broker setting that gives its default. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION;
  an illegal topic name: INVALID_TOPIC_EXCEPTION.
- BROKER (4), named by this node's id: every broker setting (`listeners`, `advertised.listeners`, `log.dirs`, ...),
  all static, so read-only. An empty name asks for the cluster's dynamic defaults: there are none. Another id or a
  name that is not a number: INVALID_REQUEST, as Kafka answers.
- BROKER_LOGGER (8), named by this node's id: the broker's loggers and their levels (`_broker_loggers`), source
  DYNAMIC_BROKER_LOGGER_CONFIG; an empty name or another id: INVALID_REQUEST.
- Any other resource type: INVALID_REQUEST.
A null or empty list of configuration keys asks for every config, as in Kafka.
"""

from __future__ import annotations

from typing import Any

from kafkalite.broker.topic import validate_topic_name
from kafkalite.config import ConfigEntry, ConfigSource, ConfigType, describe_broker
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._broker_loggers import loggers
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8


def _entry(ctx: RequestContext, entry: ConfigEntry, synonyms: bool, documentation: bool) -> Any:
    return ctx.build(
        "DescribeConfigsResourceResult",
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=entry.source,
        is_sensitive=entry.is_sensitive,
        synonyms=[
            ctx.build("DescribeConfigsSynonym", name=s.name, value=s.value, source=s.source) for s in entry.synonyms
        ]
        if synonyms
        else [],
        config_type=entry.type,
        documentation=entry.doc if documentation and entry.doc else None,
    )


def broker_name_error(ctx: RequestContext, name: str, *, empty_allowed: bool) -> str | None:
    """Kafka's check of a BROKER or BROKER_LOGGER resource name: this node's id (or, where allowed, empty)."""
    if name == "":
        return None if empty_allowed else "Broker id must not be empty"
    try:
        broker_id = int(name)
    except ValueError:
        return f"Broker id must be an integer, but it is: {name}"
    if broker_id != ctx.server.node_id:
        expected = f"{ctx.server.node_id} or empty string" if empty_allowed else str(ctx.server.node_id)
        return f"Unexpected broker id, expected {expected}, but received {name}"
    return None


def _logger_entries() -> list[ConfigEntry]:
    source = ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG
    return [ConfigEntry(name, level, source=source, type=ConfigType.STRING, doc="") for name, level in loggers()]


def _entries(ctx: RequestContext, kind: int, name: str) -> tuple[int, str | None, list[ConfigEntry]]:
    if kind == TOPIC:
        try:
            validate_topic_name(name, internal=True)
            return 0, None, ctx.broker.topic(name).config.describe()
        except Exception as e:
            return error_code(e), error_message(e), []
    if kind not in (BROKER, BROKER_LOGGER):
        return INVALID_REQUEST, f"Unsupported resource type: {kind}", []
    refusal = broker_name_error(ctx, name, empty_allowed=kind == BROKER)
    if refusal is not None:
        return INVALID_REQUEST, refusal, []
    if kind == BROKER_LOGGER:
        return 0, None, _logger_entries()
    if name == "":
        return 0, None, []  # the cluster-wide dynamic defaults: KafkaLite's broker settings are all static
    return 0, None, describe_broker(ctx.broker.config, dict(ctx.server.settings))


def _describe(ctx: RequestContext, resource: Any, req: Any) -> tuple[int, str | None, list[Any]]:
    code, message, entries = _entries(ctx, resource.resource_type, resource.resource_name)
    keys = resource.configuration_keys
    documentation = getattr(req, "include_documentation", False)
    configs = [
        _entry(ctx, entry, req.include_synonyms, documentation) for entry in entries if not keys or entry.name in keys
    ]
    return code, message, configs


@handles(ApiKey.DESCRIBE_CONFIGS, versions=range(1, 5))
async def describe_configs(ctx: RequestContext, req: Any) -> Any:
    results = []
    for resource in req.resources:
        code, message, configs = _describe(ctx, resource, req)
        results.append(
            ctx.build(
                "DescribeConfigsResult",
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return ctx.build("DescribeConfigsResponse", throttle_time=0, results=results)
