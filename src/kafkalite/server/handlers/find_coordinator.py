"""FindCoordinator (API key 10), versions 0-6.

v1 adds key_type (0 group, 1 transaction), throttle_time_ms and error_message · v2 is v1 again · v3 is the first
flexible version · v4 looks up many keys at once (coordinator_keys → coordinators) · v5 and v6 are v4 again.

This broker coordinates every group and every transactional id: both key types answer with this broker. Other key
types (2, share groups) get INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INVALID_REQUEST

GROUP = 0
TRANSACTION = 1


def _answer(ctx: RequestContext, key_type: int) -> dict[str, Any]:
    if key_type not in (GROUP, TRANSACTION):
        message = f"coordinator key type {key_type} is not served (0 group, 1 transaction)"
        return {"error_code": INVALID_REQUEST, "error_message": message, "node_id": -1, "host": "", "port": -1}
    server = ctx.server
    return {"error_code": 0, "error_message": None, "node_id": server.node_id, "host": server.host, "port": server.port}


@handles(ApiKey.FIND_COORDINATOR, versions=range(0, 7))
async def find_coordinator(ctx: RequestContext, req: Any) -> Any:
    key_type = getattr(req, "key_type", GROUP)
    if ctx.version >= 4:
        coordinators = [ctx.build("Coordinator", key=key, **_answer(ctx, key_type)) for key in req.coordinator_keys]
        return ctx.build("FindCoordinatorResponse", throttle_time=0, coordinators=coordinators)
    return ctx.build("FindCoordinatorResponse", throttle_time=0, **_answer(ctx, key_type))
