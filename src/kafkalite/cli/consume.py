"""`kafkalite consume TOPIC`: records to stdout from any Kafka cluster, as values, key-values, JSON or a template."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from kafkalite.admin import ClientSettings, Cluster
from kafkalite.admin.consume import RecordStream, StartPosition
from kafkalite.cli._cluster import cluster_command, stopped_by_signals
from kafkalite.cli._common import fail
from kafkalite.cli.formats import FormatError, formatter


def parse_time(text: str) -> int:
    """ISO 8601 (a date, or a date and time, with or without a zone; no zone means UTC) → ms since the epoch."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        fail(f"bad time {text!r}: expected ISO 8601, e.g. 2026-05-16T11:43:26Z")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@click.command()
@cluster_command
@click.argument("topic")
@click.option("--from-beginning", is_flag=True, help="Start at the log start (the default without --group).")
@click.option("--offset", type=int, help="Start at this offset; negative counts back from the end (-10: last 10).")
@click.option("--from-time", metavar="ISO8601", help="Start at the first record at or after this time.")
@click.option("-p", "--partition", "partitions", multiple=True, type=click.IntRange(0), help="Only these. Repeatable.")
@click.option("-g", "--group", help="Read as this group: from its committed offsets, committing as records print.")
@click.option("-n", "--count", type=click.IntRange(1), help="Stop after this many records.")
@click.option("--follow", is_flag=True, help="Keep waiting for new records instead of stopping at the end.")
@click.option(
    "--format",
    "format_",
    default="value",
    show_default=True,
    metavar="FORMAT",
    help="value | key-value | json | a template such as '%p:%o %k=%s\\n' (see below).",
)
@click.option("-K", "--key-separator", default="\t", metavar="SEP", help="Between key and value in key-value format.")
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
)
def consume(
    settings: ClientSettings,
    topic: str,
    from_beginning: bool,
    offset: int | None,
    from_time: str | None,
    partitions: tuple[int, ...],
    group: str | None,
    count: int | None,
    follow: bool,
    format_: str,
    key_separator: str,
    isolation_level: str,
) -> None:
    """Print TOPIC's records, by default from the beginning to the current end.

    With --group, reading starts at the group's committed offsets (the log start where it has none) and the offsets
    of printed records are committed.

    \b
    Template tokens (as kcat's -f): %t topic, %p partition, %o offset, %k key, %s value,
    %K / %S key / value length, %T timestamp (ms), %h headers, %% percent; \\n \\t escapes.

    \b
    Examples:
      kafkalite consume orders
      kafkalite consume orders --format json -n 10 --offset -10
      kafkalite consume orders --from-time 2026-05-16T11:00:00Z --format '%p:%o %k=%s\\n'
      kafkalite consume orders --group audit --follow
    """
    chosen = [flag for flag, given in (("--from-beginning", from_beginning), ("--offset", offset is not None),
              ("--from-time", from_time is not None)) if given]  # fmt: skip
    if len(chosen) > 1:
        fail(f"{' and '.join(chosen)} cannot be combined: choose one start position")
    if from_time is not None:
        start = StartPosition("time", parse_time(from_time))
    elif offset is not None:
        start = StartPosition("offset", offset)
    elif from_beginning or group is None:
        start = StartPosition("beginning")
    else:
        start = StartPosition("committed")
    try:
        render = formatter(format_, key_separator.encode())
    except FormatError as exc:
        fail(str(exc))
    stream = RecordStream(
        Cluster.connect(settings),
        topic,
        start=start,
        partitions=list(partitions) or None,
        group=group,
        isolation_level=isolation_level,
        follow=follow,
        limit=count,
    )
    out = sys.stdout.buffer
    # Ctrl-C or a service manager's SIGTERM: leave the group now, not after the session.
    with stopped_by_signals() as signals:
        try:
            batches = stream.batches(stop=signals.stop)
            while True:
                with signals.held():  # librdkafka may be running a rebalance callback
                    batch = next(batches, None)
                if batch is None:
                    break
                out.write(render(batch))
                out.flush()
                stream.done(batch)
        finally:
            with signals.held():  # leaving the group runs the revocation callback
                stream.close()
