"""`kafkalite groups list|describe|reset-offsets|delete` on any Kafka cluster."""

from __future__ import annotations

from dataclasses import asdict

import click

from kafkalite.admin import ClientSettings, Cluster
from kafkalite.admin import groups as ops
from kafkalite.cli._cluster import cluster_command, output_option, print_json
from kafkalite.cli._common import fail
from kafkalite.cli._render import print_table
from kafkalite.cli.consume import parse_time


@click.group()
def groups() -> None:
    """List and inspect consumer groups, move their offsets, delete them.

    \b
    Examples:
      kafkalite groups list
      kafkalite groups describe billing --output json
      kafkalite groups reset-offsets billing --topic orders --to-earliest --dry-run
      kafkalite groups reset-offsets billing --topic orders --to-datetime 2026-05-16T00:00:00Z
      kafkalite groups reset-offsets billing --topic orders --partition 0 --shift-by -10
      kafkalite groups delete billing
    """


@groups.command("list")
@cluster_command
@output_option
def list_groups(settings: ClientSettings, output: str) -> None:
    """List consumer groups with their state."""
    found = ops.list_groups(Cluster.connect(settings))
    if output == "json":
        print_json([asdict(group) for group in found])
        return
    print_table(None, ["GROUP", "STATE"], [(g.group_id, g.state) for g in found])


@groups.command()
@cluster_command
@output_option
@click.argument("group")
def describe(settings: ClientSettings, output: str, group: str) -> None:
    """Members and their assignment; committed offset, end offset and lag per partition; total lag."""
    described = ops.describe_group(Cluster.connect(settings), group)
    if output == "json":
        document = asdict(described)
        for partition, info in zip(document["partitions"], described.partitions, strict=True):
            partition["lag"] = info.lag
        document["total_lag"] = described.total_lag
        print_json(document)
        return
    click.echo(
        f"Group {described.group_id}: {described.state}, {len(described.members)} member(s)"
        + (f", assignor {described.assignor}" if described.assignor else "")
        + f", total lag {described.total_lag}"
    )
    if described.members:
        print_table(
            "Members",
            ["MEMBER", "CLIENT", "HOST", "ASSIGNMENT"],
            [
                (m.member_id, m.client_id, m.host, " ".join(f"{t}[{p}]" for t, p in m.assignment))
                for m in described.members
            ],
        )
    print_table(
        "Offsets",
        ["TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "CLIENT"],
        [(p.topic, p.partition, p.committed, p.end_offset, p.lag, p.member) for p in described.partitions],
    )


@groups.command("reset-offsets")
@cluster_command
@output_option
@click.argument("group")
@click.option("-t", "--topic", "topic_names", multiple=True, required=True, help="Topic to reset. Repeatable.")
@click.option("-p", "--partition", "partitions", multiple=True, type=click.IntRange(0), help="Only these. Repeatable.")
@click.option("--to-earliest", is_flag=True, help="The log start.")
@click.option("--to-latest", is_flag=True, help="The log end: skip everything not yet read.")
@click.option("--to-datetime", metavar="ISO8601", help="The first record at or after this time.")
@click.option("--to-offset", type=click.IntRange(0), help="This offset (clamped to the log's range).")
@click.option("--shift-by", type=int, help="Move the committed offset by N (negative: back).")
@click.option("--dry-run", is_flag=True, help="Show the new offsets without committing them.")
def reset_offsets(
    settings: ClientSettings,
    output: str,
    group: str,
    topic_names: tuple[str, ...],
    partitions: tuple[int, ...],
    to_earliest: bool,
    to_latest: bool,
    to_datetime: str | None,
    to_offset: int | None,
    shift_by: int | None,
    dry_run: bool,
) -> None:
    """Move GROUP's committed offsets on --topic; the group must have no active members."""
    chosen = {
        "--to-earliest": ops.ResetTarget("earliest") if to_earliest else None,
        "--to-latest": ops.ResetTarget("latest") if to_latest else None,
        "--to-datetime": ops.ResetTarget("datetime", parse_time(to_datetime)) if to_datetime else None,
        "--to-offset": ops.ResetTarget("offset", to_offset) if to_offset is not None else None,
        "--shift-by": ops.ResetTarget("shift", shift_by) if shift_by is not None else None,
    }
    given = {flag: target for flag, target in chosen.items() if target is not None}
    if len(given) != 1:
        fail(f"give exactly one of {', '.join(chosen)} (got {', '.join(given) or 'none'})")
    (target,) = given.values()
    cluster = Cluster.connect(settings)
    changes = ops.plan_reset(cluster, group, topic_names, target, list(partitions) or None)
    if not dry_run:
        ops.apply_reset(cluster, group, changes)
    if output == "json":
        print_json({"group": group, "dry_run": dry_run, "offsets": [asdict(c) for c in changes]})
        return
    print_table(
        f"Group {group}: new offsets" + (" (dry run, nothing committed)" if dry_run else ""),
        ["TOPIC", "PARTITION", "CURRENT", "NEW"],
        [(c.topic, c.partition, c.current, c.new) for c in changes],
    )


@groups.command()
@cluster_command
@click.argument("group_ids", metavar="GROUP...", nargs=-1, required=True)
def delete(settings: ClientSettings, group_ids: tuple[str, ...]) -> None:
    """Delete one or more groups and their committed offsets (each must have no active members)."""
    ops.delete_groups(Cluster.connect(settings), group_ids)
    click.echo(f"Deleted group(s) {', '.join(group_ids)}")
