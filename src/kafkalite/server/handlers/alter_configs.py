"""AlterConfigs (API key 33), versions 0-2.

v1 is v0 again · v2 is the first flexible version.

The non-incremental predecessor of IncrementalAlterConfigs, still the one aiokafka's admin client sends. As in Kafka,
the configs sent become the topic's whole set of overrides: every override not named goes back to its default, and a
null value means the default too. Topics only (resource type 2); broker configs are static: INVALID_REQUEST. Every
change of a resource is validated before any applies, and validate_only applies none.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message
from kafkalite.server.handlers.incremental_alter_configs import TOPIC, answer_each


async def _replace(ctx: RequestContext, resource: Any, validate_only: bool) -> tuple[int, str | None]:
    if resource.resource_type != TOPIC:
        return INVALID_REQUEST, f"resource type {resource.resource_type} cannot be altered in KafkaLite"
    try:
        changes: dict[str, str | None] = dict.fromkeys(ctx.broker.topic(resource.resource_name).config.overrides())
        changes.update({config.name: config.value for config in resource.configs})
        await ctx.broker.alter_topic_config(resource.resource_name, changes, validate_only=validate_only)
    except Exception as e:
        return error_code(e), error_message(e)
    return 0, None


@handles(ApiKey.ALTER_CONFIGS, versions=range(0, 3))
async def alter_configs(ctx: RequestContext, req: Any) -> Any:
    responses = await answer_each(ctx, req, _replace)
    return ctx.build("AlterConfigsResponse", throttle_time=0, responses=responses)
