"""The overview page (`/`) and the totals its live chart polls (`/api/overview`).

The chart's rates are differences of the totals between two polls, taken by the page's script: the broker keeps no
time series of its own. Totals are sums of per-partition counters (no log is read), so a poll costs one pass over
the partitions. With a login, topics and groups the principal may not DESCRIBE are left out of every figure, and
the broker-wide facts (listeners, data directory, disk, connections, requests) need DESCRIBE on the cluster.
"""

from __future__ import annotations

import shutil
import time
from typing import Any

from aiohttp import web

from kafkalite.broker import OFFSETS_TOPIC, Broker
from kafkalite.http.auth import OPEN, Access
from kafkalite.http.server import access_of, console_of, page
from kafkalite.security.acls import Operation, ResourceType


def totals(broker: Broker, access: Access = OPEN) -> dict[str, Any]:
    bytes_in = bytes_out = messages_in = partitions = messages = 0
    topics = 0
    for topic in list(broker.topics.values()):
        if topic.is_internal or not access.may(Operation.DESCRIBE, ResourceType.TOPIC, topic.name):
            continue
        topics += 1
        for partition in topic.partitions:
            partitions += 1
            bytes_in += partition.bytes_in
            bytes_out += partition.bytes_out
            messages_in += partition.messages_in
            messages += partition.message_count
    requests = broker.stats.requests
    cluster = access.may(Operation.DESCRIBE, ResourceType.CLUSTER)
    return {
        "time": time.time(),
        "bytes_in": bytes_in,
        "bytes_out": bytes_out,
        "messages_in": messages_in,
        "topics": topics,
        "partitions": partitions,
        "messages": messages,
        "connections": requests.connections_open if cluster else None,
        "requests": sum(api.requests for api in list(requests.apis.values())) if cluster else None,
    }


async def overview(request: web.Request) -> web.Response:
    console = console_of(request)
    broker = console.broker
    access = access_of(request)
    cluster = access.may(Operation.DESCRIBE, ResourceType.CLUSTER)
    disk_free = disk_total = None
    if broker.data_dir is not None and cluster:
        usage = shutil.disk_usage(broker.data_dir)
        disk_free, disk_total = usage.free, usage.total
    groups = [
        g
        for g in broker.groups.list_groups()
        if not g.group_id.startswith("__") and access.may(Operation.DESCRIBE, ResourceType.GROUP, g.group_id)
    ]
    now = totals(broker, access)
    return page(
        request,
        "overview.html",
        title="Overview",
        section="overview",
        broker=broker,
        cluster=cluster,
        listeners=console.listeners,
        uptime=time.time() - broker.stats.started_at,
        data_dir=str(broker.data_dir) if broker.data_dir is not None else "in memory (nothing is kept)",
        log_bytes=broker.size_bytes(),
        offsets_bytes=sum(p.log.size_bytes for p in broker.topic(OFFSETS_TOPIC).partitions),
        disk_free=disk_free,
        disk_total=disk_total,
        groups=len(groups),
        totals=now,
        fsync=broker.config.fsync,
    )


async def overview_json(request: web.Request) -> web.Response:
    return web.json_response(
        totals(console_of(request).broker, access_of(request)), headers={"Cache-Control": "no-store"}
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/", overview, name="overview")
    router.add_get("/api/overview", overview_json)
