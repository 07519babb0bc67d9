"""ListConfigResources (API key 74), versions 0-1 (flexible).

v0 is KIP-714's ListClientMetricsResources: it lists client-metrics subscriptions only · v1 (KIP-1142) adds
resource_types and each resource's type.

As Kafka answers: v0 lists the client-metrics resources, of which KafkaLite has none. v1 lists the resources of the
requested types, or of every supported type when none is named, in Kafka's order: groups with group configs (none:
KafkaLite has no group configs), client metrics (none), this broker as a BROKER_LOGGER and as a BROKER, then every
topic. A type Kafka does not support here fails the whole request with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNSUPPORTED_VERSION

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SUPPORTED_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


@handles(ApiKey.LIST_CONFIG_RESOURCES, versions=range(0, 2))
async def list_config_resources(ctx: RequestContext, req: Any) -> Any:
    if ctx.version == 0:
        return ctx.build("ListConfigResourcesResponse", throttle_time=0, error_code=0, config_resources=[])
    types = set(req.resource_types) or set(SUPPORTED_TYPES)
    if not types <= set(SUPPORTED_TYPES):
        return ctx.build(
            "ListConfigResourcesResponse", throttle_time=0, error_code=UNSUPPORTED_VERSION, config_resources=[]
        )
    node = str(ctx.server.node_id)
    listed: list[tuple[str, int]] = []
    for resource_type in (BROKER_LOGGER, BROKER):
        if resource_type in types:
            listed.append((node, resource_type))
    if TOPIC in types:
        listed.extend((name, TOPIC) for name in sorted(ctx.broker.topics))
    resources = [ctx.build("ConfigResource", resource_name=name, resource_type=kind) for name, kind in listed]
    return ctx.build("ListConfigResourcesResponse", throttle_time=0, error_code=0, config_resources=resources)
