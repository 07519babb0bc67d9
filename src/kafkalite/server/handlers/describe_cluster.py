"""DescribeCluster (API key 60), versions 0-2.

v0 is flexible from the start · v1 adds endpoint_type · v2 adds include_fenced_brokers and is_fenced.

The cluster is this one broker, which is also its controller. Only brokers are described: a request for controller
endpoints (endpoint_type 2) gets UNSUPPORTED_ENDPOINT_TYPE, as a broker does.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INT32_MIN

BROKERS = 1
UNSUPPORTED_ENDPOINT_TYPE = 119


@handles(ApiKey.DESCRIBE_CLUSTER, versions=range(0, 3))
async def describe_cluster(ctx: RequestContext, req: Any) -> Any:
    endpoint_type = getattr(req, "endpoint_type", BROKERS)
    code, message = (0, None) if endpoint_type == BROKERS else (UNSUPPORTED_ENDPOINT_TYPE, "only brokers are described")
    broker = ctx.build(
        "DescribeClusterBroker",
        broker_id=ctx.server.node_id,
        host=ctx.server.host,
        port=ctx.server.port,
        rack=None,
        is_fenced=False,
    )
    return ctx.build(
        "DescribeClusterResponse",
        throttle_time=0,
        error_code=code,
        error_message=message,
        endpoint_type=endpoint_type,
        cluster_id=ctx.broker.cluster_id,
        controller_id=ctx.server.node_id,
        brokers=[broker] if code == 0 else [],
        cluster_authorized_operations=INT32_MIN,
    )
