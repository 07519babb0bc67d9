"""DescribeConfigs (API key 32), versions 1-4.

v1 adds include_synonyms, config_source and synonyms (and is the oldest served) · v2 is v1 again · v3 adds
include_documentation, config_type and documentation · v4 is the first flexible version.

Answers come from the settings tables of `kafkalite.config`, as a single-broker Kafka 4 answers:
- TOPIC (2): every topic config Kafka defines, or the requested keys (unknown keys are left out, as Kafka leaves
  them out), with its value, source (DYNAMIC_TOPIC_CONFIG when set on the topic, STATIC_BROKER_CONFIG when the
  broker's default was set, else DEFAULT_CONFIG), type and documentation; synonyms, when asked for, run from the
  topic's own value through the broker setting that gives its default. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
- BROKER (4), named by this node's id: every broker setting (`listeners`, `advertised.listeners`, `log.dirs`, ...),
  all static, so read-only. An empty name asks for the cluster's dynamic defaults: there are none. Another id or a
  name that is not a number: INVALID_REQUEST, as Kafka answers.
- Any other resource type: INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from kafkalite.config import ConfigEntry, describe_broker
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message

TOPIC = 2
BROKER = 4


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
        documentation=entry.doc if documentation else None,
    )


def _broker_entries(ctx: RequestContext, name: str) -> tuple[int, str | None, list[ConfigEntry]]:
    if name == "":
        return 0, None, []  # the cluster-wide dynamic defaults: KafkaLite's broker settings are all static
    if not name.lstrip("-").isdigit():
        return INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}", []
    if int(name) != ctx.server.node_id:
        return INVALID_REQUEST, f"Unexpected broker id, expected {ctx.server.node_id} or empty string, but {name}", []
    return 0, None, describe_broker(ctx.broker.config, ctx.server.settings)


def _describe(ctx: RequestContext, resource: Any, req: Any) -> tuple[int, str | None, list[Any]]:
    if resource.resource_type == BROKER:
        code, message, entries = _broker_entries(ctx, resource.resource_name)
    elif resource.resource_type == TOPIC:
        try:
            entries = ctx.broker.topic(resource.resource_name).config.describe()
        except Exception as e:
            return error_code(e), error_message(e), []
        code, message = 0, None
    else:
        return INVALID_REQUEST, f"Unsupported resource type: {resource.resource_type}", []
    keys = resource.configuration_keys
    documentation = getattr(req, "include_documentation", False)
    configs = [
        _entry(ctx, entry, req.include_synonyms, documentation)
        for entry in entries
        if keys is None or entry.name in keys
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
