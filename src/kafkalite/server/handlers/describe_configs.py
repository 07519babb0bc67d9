"""DescribeConfigs (API key 32), versions 1-4.

v1 adds include_synonyms, config_source and synonyms (and is the oldest served) · v2 is v1 again · v3 adds
include_documentation, config_type and documentation · v4 is the first flexible version.

Topics (resource type 2) answer every topic config KafkaLite knows, or the requested keys; each entry's synonyms,
when asked for, hold the entry itself with its source. The broker (type 4, named by its node id) has no dynamic
configs and answers an empty list. Other resource types get INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from kafkalite.broker import ConfigEntry
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message

TOPIC = 2
BROKER = 4
CONFIG_TYPE_UNKNOWN = 0


def _entry(ctx: RequestContext, entry: ConfigEntry, synonyms: bool, documentation: bool) -> Any:
    synonym = ctx.build("DescribeConfigsSynonym", name=entry.name, value=entry.value, source=entry.source)
    return ctx.build(
        "DescribeConfigsResourceResult",
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=entry.source,
        is_sensitive=entry.is_sensitive,
        synonyms=[synonym] if synonyms else [],
        config_type=CONFIG_TYPE_UNKNOWN,
        documentation=entry.doc if documentation else None,
    )


def _describe(ctx: RequestContext, resource: Any, req: Any) -> tuple[int, str | None, list[Any]]:
    if resource.resource_type == BROKER:
        return 0, None, []
    if resource.resource_type != TOPIC:
        return INVALID_REQUEST, f"resource type {resource.resource_type} is not supported", []
    try:
        entries = ctx.broker.topic(resource.resource_name).config.describe()
    except Exception as e:
        return error_code(e), error_message(e), []
    keys = resource.configuration_keys
    documentation = getattr(req, "include_documentation", False)
    configs = [
        _entry(ctx, entry, req.include_synonyms, documentation)
        for entry in entries
        if keys is None or entry.name in keys
    ]
    return 0, None, configs


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
