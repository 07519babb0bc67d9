"""IncrementalAlterConfigs (API key 44), versions 0-1.

v1 is the first flexible version.

Topic configs (resource type 2) accept SET (0) and DELETE (1, back to the default); every change of a resource is
validated before any applies, and validate_only applies none. APPEND and SUBTRACT (2, 3) are for list-valued
configs, which KafkaLite's topic configs are not: INVALID_CONFIG. Broker configs (type 4) are static: INVALID_REQUEST.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message

TOPIC = 2
SET, DELETE = 0, 1
INVALID_CONFIG = 40

Alter = Callable[[RequestContext, Any, bool], Awaitable[tuple[int, str | None]]]


async def _alter(ctx: RequestContext, resource: Any, validate_only: bool) -> tuple[int, str | None]:
    if resource.resource_type != TOPIC:
        return INVALID_REQUEST, f"resource type {resource.resource_type} cannot be altered in KafkaLite"
    changes: dict[str, str | None] = {}
    for config in resource.configs:
        if config.config_operation not in (SET, DELETE):
            return INVALID_CONFIG, f"{config.name}: only SET and DELETE apply to KafkaLite topic configs"
        changes[config.name] = config.value if config.config_operation == SET else None
    try:
        await ctx.broker.alter_topic_config(resource.resource_name, changes, validate_only=validate_only)
    except Exception as e:
        return error_code(e), error_message(e)
    return 0, None


async def answer_each(ctx: RequestContext, req: Any, alter: Alter) -> list[Any]:
    """One AlterConfigsResourceResponse per resource: AlterConfigs (key 33) answers in the same shape."""
    responses = []
    for resource in req.resources:
        code, message = await alter(ctx, resource, req.validate_only)
        responses.append(
            ctx.build(
                "AlterConfigsResourceResponse",
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return responses


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=range(0, 2))
async def incremental_alter_configs(ctx: RequestContext, req: Any) -> Any:
    responses = await answer_each(ctx, req, _alter)
    return ctx.build("IncrementalAlterConfigsResponse", throttle_time=0, responses=responses)
