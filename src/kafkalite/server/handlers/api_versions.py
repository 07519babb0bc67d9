"""ApiVersions (API key 18), versions 0-4.

v1 adds throttle_time_ms · v2 is v1 again · v3 is the first flexible version (the request carries the client's
software name and version; the response adds tagged feature fields) · v4 is v3 again.
The response header is v0 at every version, so a client can read it before it knows what we speak. A request at a
version above 4 never reaches this handler: the dispatcher answers it with the v0 fallback body (UNSUPPORTED_VERSION,
KIP-511), and the client retries at a version listed there.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles, supported_ranges


@handles(ApiKey.API_VERSIONS, versions=range(0, 5))
async def api_versions(ctx: RequestContext, req: Any) -> Any:
    api_keys = [ctx.build("ApiVersion", api_key=k, min_version=lo, max_version=hi) for k, lo, hi in supported_ranges()]
    return ctx.build("ApiVersionsResponse", error_code=0, api_keys=api_keys, throttle_time=0)
