"""Consumer-group pages: the list (`/groups`) and one group (`/groups/<id>`): state, protocol, members with their
assignments, committed / end offset / lag per partition with totals, and the offset reset of an Empty group.

Lag is the partition's log end offset minus the committed offset, computed when the page is drawn. A reset is an
ordinary standalone commit (generation -1, no member id) through the group service, which refuses it unless the
group is Empty — the same rule Kafka applies to `kafka-consumer-groups --reset-offsets`; a group that gained a member
between the page and the post gets the refusal shown instead.

With a login, the list shows the groups the principal may DESCRIBE (ListGroups' rule), a group's page needs DESCRIBE
on the group and shows offsets of the topics it may DESCRIBE (OffsetFetch's), and a reset needs READ on the group
and on the topic (OffsetCommit's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from aiohttp import web

from kafkalite.broker import EARLIEST, LATEST, Broker, CommittedOffset
from kafkalite.broker.dead_letter_format import REPLAY_GROUP
from kafkalite.errors import GroupError, InvalidConfigError, KafkaLiteError
from kafkalite.groups.consumer_protocol import decode_assignment
from kafkalite.http.auth import Access
from kafkalite.http.messages import parse_time
from kafkalite.http.server import access_of, console_of, form_of, page, redirect
from kafkalite.security.acls import Operation, ResourceType

RESET_TARGETS = ("earliest", "latest", "time", "offset")


def lag_rows(
    broker: Broker,
    group: str,
    committed_offsets: Mapping[tuple[str, int], CommittedOffset] | None = None,
    access: Access | None = None,
) -> list[dict[str, Any]]:
    """Committed offset, end offset and lag of each partition the group committed (from `committed_offsets` when
    the caller already has them: the list page reads the whole table once, not once per group), on the topics
    `access` may DESCRIBE."""
    if committed_offsets is None:
        committed_offsets = broker.offsets.committed(group)
    rows = []
    shown: dict[str, bool] = {}
    for (topic_name, index), committed in sorted(committed_offsets.items()):
        if access is not None:
            if topic_name not in shown:
                shown[topic_name] = access.may(Operation.DESCRIBE, ResourceType.TOPIC, topic_name)
            if not shown[topic_name]:
                continue
        topic = broker.topics.get(topic_name)
        if topic is None or not 0 <= index < len(topic.partitions):
            end = None
        else:
            end = topic.partitions[index].high_watermark
        rows.append(
            {
                "topic": topic_name,
                "partition": index,
                "committed": committed.offset,
                "end": end,
                "lag": None if end is None else max(0, end - committed.offset),
                "when": committed.commit_timestamp,
            }
        )
    return rows


def assignment_of(data: bytes, protocol_type: str) -> list[tuple[str, int]] | None:
    """A member's partitions, when its group speaks the consumer protocol and the bytes decode; else None."""
    if protocol_type != "consumer" or not data:
        return None
    try:
        return list(decode_assignment(data).partitions)
    except Exception:  # assignment bytes are whatever the group leader sent: show them undecoded
        return None


async def list_groups(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    access = access_of(request)
    by_group: dict[str, dict[tuple[str, int], CommittedOffset]] = defaultdict(dict)
    for (group, topic, partition), committed in broker.offsets.entries():
        by_group[group][topic, partition] = committed
    rows = []
    for listing in sorted(broker.groups.list_groups(), key=lambda g: g.group_id):
        if listing.group_id.startswith(REPLAY_GROUP):  # replay progress, not a consumer group
            continue
        if not access.may(Operation.DESCRIBE, ResourceType.GROUP, listing.group_id):
            continue
        # an Empty group has no members and no protocol chosen: only the others need describing
        described = None if listing.state == "Empty" else broker.groups.describe(listing.group_id)
        lags = lag_rows(broker, listing.group_id, by_group.get(listing.group_id, {}), access)
        rows.append(
            {
                "id": listing.group_id,
                "state": listing.state,
                "protocol_type": listing.protocol_type,
                "protocol": described.protocol_name if described is not None else "",
                "members": len(described.members) if described is not None else 0,
                "topics": sorted({row["topic"] for row in lags}),
                "lag": sum(row["lag"] or 0 for row in lags),
            }
        )
    return page(request, "groups.html", title="Consumer groups", section="groups", groups=rows)


async def show_group(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    group = request.match_info["group"]
    access = access_of(request)
    access.require(Operation.DESCRIBE, ResourceType.GROUP, group)
    described = broker.groups.describe(group)
    if described.state == "Dead" and not broker.offsets.committed(group):
        raise web.HTTPNotFound(text=f"There is no consumer group {group!r}.")
    members = [
        {
            "id": m.member_id,
            "instance": m.group_instance_id,
            "client": m.client_id,
            "host": m.client_host,
            "assignment": assignment_of(m.assignment, described.protocol_type),
            "assignment_bytes": len(m.assignment),
        }
        for m in described.members
    ]
    rows = lag_rows(broker, group, access=access)
    return page(
        request,
        "group.html",
        title=f"Group {group}",
        section="groups",
        group=group,
        group_url=quote(group, safe=""),
        described=described,
        members=members,
        offsets=rows,
        total_committed_lag=sum(row["lag"] or 0 for row in rows),
        topics=sorted({row["topic"] for row in rows}),
        all_topics=sorted(
            access.visible(ResourceType.TOPIC, [t.name for t in broker.topics.values() if not t.is_internal])
        ),
        resettable=described.state in ("Empty", "Dead"),
    )


async def reset_offsets(request: web.Request) -> web.Response:
    broker = console_of(request).broker
    group = request.match_info["group"]
    location = f"/groups/{quote(group, safe='')}"
    form = await form_of(request)
    access = access_of(request)
    access.require(Operation.READ, ResourceType.GROUP, group)
    access.require(Operation.READ, ResourceType.TOPIC, form.get("topic", ""))
    try:
        topic = broker.topic(form.get("topic", ""))
        target = form.get("to", "")
        if target not in RESET_TARGETS:
            raise InvalidConfigError(f"reset to one of {', '.join(RESET_TARGETS)}, not {target!r}")
        value = form.get("value", "").strip()
        entries = []
        for partition in topic.partitions:
            if target == "earliest":
                offset = broker.list_offset(topic.name, partition.index, EARLIEST)[0]
            elif target == "latest":
                offset = broker.list_offset(topic.name, partition.index, LATEST)[0]
            elif target == "time":
                found = broker.list_offset(topic.name, partition.index, parse_time(value))[0]
                offset = found if found >= 0 else partition.high_watermark
            else:
                try:
                    wanted = int(value)
                except ValueError:
                    raise InvalidConfigError(f"offset must be a whole number, got {value!r}") from None
                offset = min(max(wanted, partition.log_start_offset), partition.high_watermark)
            entries.append((topic.name, partition.index, offset, "", -1))
        error = await broker.groups.commit_offsets(group, "", -1, entries)
        if error:
            raise GroupError(f"group {group!r} is not empty: stop its consumers first (Kafka error {error})", error)
    except KafkaLiteError as exc:
        raise redirect(request, location, f"Offsets not reset: {exc}", "error") from None
    moved = ", ".join(f"{t}-{p}→{o}" for t, p, o, _, _ in entries)
    raise redirect(request, location, f"Reset {group} on {topic.name} to {target}: {moved}.")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/groups", list_groups)
    router.add_get("/groups/{group}", show_group)
    router.add_post("/groups/{group}/reset", reset_offsets)
