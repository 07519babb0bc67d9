"""ListPartitionReassignments (API key 46), version 0 (flexible).

Lists the reassignments in progress: on one broker there never is one. As Kafka's controller answers, a null topics
array (every topic) and any named topics alike give an empty list with no error; unknown topics are skipped.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, versions=range(0, 1))
async def list_partition_reassignments(ctx: RequestContext, req: Any) -> Any:
    return ctx.build("ListPartitionReassignmentsResponse", throttle_time=0, error_code=0, error_message=None, topics=[])
