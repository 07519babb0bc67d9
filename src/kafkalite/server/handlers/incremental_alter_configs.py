"""IncrementalAlterConfigs (API key 44), versions 0-1.

v1 is the first flexible version.

Topic configs (resource type 2) accept SET (0), DELETE (1, back to the default), and for list-valued configs
(`cleanup.policy`, the throttled-replica lists) APPEND (2: add the items not yet in the current value) and SUBTRACT
(3: remove them); APPEND or SUBTRACT on any other config is INVALID_CONFIG, as is an unknown operation. A key named
twice in one resource is INVALID_REQUEST. Every change of a resource is validated through the topic config table
before any applies (INVALID_CONFIG naming the key and the rule), and validate_only applies none. Broker configs
(type 4) are static: INVALID_REQUEST ("Cannot update these configs dynamically"). The broker's loggers (type 8, named
by this node's id) take SET and DELETE of a level, by Kafka's rules (`_broker_loggers`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kafkalite.broker import Topic
from kafkalite.config import TOPIC_SETTINGS, ConfigType
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._broker_loggers import apply_changes, check_changes
from kafkalite.server.handlers._common import INVALID_REQUEST, error_code, error_message, log
from kafkalite.server.handlers.describe_configs import broker_name_error

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
INVALID_CONFIG = 40

Alter = Callable[[RequestContext, Any, bool], Awaitable[tuple[int, str | None]]]


def _list_change(topic: Topic, name: str, operation: int, value: str | None) -> str:
    """The new value of list config `name` after APPEND or SUBTRACT of the comma-separated items of `value`."""
    current = [item.strip() for item in topic.config.get(name).split(",") if item.strip()]
    items = [item.strip() for item in (value or "").split(",") if item.strip()]
    if operation == APPEND:
        return ",".join([*current, *(item for item in items if item not in current)])
    return ",".join(item for item in current if item not in items)


def _changes(topic: Topic, configs: Any) -> tuple[int, str | None, dict[str, str | None]]:
    changes: dict[str, str | None] = {}
    for config in configs:
        if config.name in changes:
            return INVALID_REQUEST, f"Error due to duplicate config keys: {config.name}", {}
        operation = config.config_operation
        if operation == SET:
            changes[config.name] = config.value
        elif operation == DELETE:
            changes[config.name] = None
        elif operation in (APPEND, SUBTRACT):
            setting = TOPIC_SETTINGS.get(config.name)
            if setting is None or setting.type != ConfigType.LIST:
                verb = "append" if operation == APPEND else "subtract"
                return INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {config.name}", {}
            changes[config.name] = _list_change(topic, config.name, operation, config.value)
        else:
            return INVALID_CONFIG, f"Unknown config operation {operation} for config key: {config.name}", {}
    return 0, None, changes


def _alter_loggers(ctx: RequestContext, resource: Any, validate_only: bool) -> tuple[int, str | None]:
    refusal = broker_name_error(ctx, resource.resource_name, empty_allowed=False)
    if refusal is not None:
        return INVALID_REQUEST, refusal
    code, message = check_changes(resource.configs)
    if code == 0 and not validate_only:
        apply_changes(resource.configs)
    return code, message


async def _alter(ctx: RequestContext, resource: Any, validate_only: bool) -> tuple[int, str | None]:
    if resource.resource_type == BROKER_LOGGER:
        return _alter_loggers(ctx, resource, validate_only)
    if resource.resource_type == BROKER:
        names = ", ".join(config.name for config in resource.configs)
        return (
            INVALID_REQUEST,
            f"Cannot update these configs dynamically: {names} (KafkaLite's broker configs are static)",
        )
    if resource.resource_type != TOPIC:
        return INVALID_REQUEST, f"Unsupported resource type: {resource.resource_type}"
    try:
        code, message, changes = _changes(ctx.broker.topic(resource.resource_name), resource.configs)
        if code:
            log.warning("Refused to alter configs of topic=%s: %s", resource.resource_name, message)
            return code, message
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
