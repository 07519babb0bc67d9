"""`kafkalite dlq list [T] | show T | replay T [--group G] [--dry-run]`: dead letters on any Kafka cluster.

T is always the source topic; its letters live in `T.DLQ` (Spring Kafka's headers, see
`kafkalite.broker.dead_letter_format`). The work is `kafkalite.connect()`'s `dead_letters` (list, replay); this module
parses arguments and prints.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kafkalite.cli._common import fail
from kafkalite.errors import KafkaLiteError, UnknownTopicError

if TYPE_CHECKING:
    from kafkalite.broker.dead_letter_format import DeadLetter, Replay
    from kafkalite.client.network import Cluster

T = TypeVar("T")
DLQ_SUFFIX = ".DLQ"

bootstrap_option = click.option(
    "-b",
    "--bootstrap",
    default=lambda: os.environ.get("KAFKALITE_BOOTSTRAP") or "localhost:9092",
    show_default="$KAFKALITE_BOOTSTRAP or localhost:9092",
    metavar="HOST:PORT[,...]",
    help="Any Kafka cluster: kafkalite serve, Apache Kafka, Redpanda, ...",
)
timeout_option = click.option(
    "--timeout", default=10.0, show_default=True, type=click.FloatRange(0.1), help="Seconds per request."
)
verbose_option = click.option("-v", "--verbose", is_flag=True, help="Show the Kafka client's own log lines on stderr.")
output_option = click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one JSON document on stdout, for scripts.",
)


@click.group()
def dlq() -> None:
    """Dead letters: what failed, why, and replaying it to the group that failed.

    \b
    Examples:
      kafkalite dlq list                         # every topic with dead letters
      kafkalite dlq show orders                  # the letters of orders (in orders.DLQ)
      kafkalite dlq replay orders --dry-run      # what a replay would send, and where
      kafkalite dlq replay orders --group billing
    """


@dlq.command("list")
@bootstrap_option
@timeout_option
@verbose_option
@output_option
@click.argument("topic", required=False)
def list_letters(bootstrap: str, timeout: float, verbose: bool, output: str, topic: str | None) -> None:
    """Topics with dead letters: how many, how many not replayed yet, and by which group."""

    async def summarise(cluster: Cluster) -> list[dict[str, Any]]:
        if topic is not None:
            await _source_topic(cluster, topic)
            sources = [topic]
        else:
            sources = [t[: -len(DLQ_SUFFIX)] for t in await cluster.list_topics() if t.endswith(DLQ_SUFFIX)]
        rows = []
        for source in sources:
            letters = await cluster.dead_letters.list(source)
            if topic is not None and not letters:
                continue
            pending = await cluster.dead_letters.replay(source, dry_run=True)
            groups = Counter(letter.consumer_group or "(producer)" for letter in letters)
            last = max((letter.timestamp for letter in letters), default=-1)
            rows.append(
                {
                    "topic": source,
                    "dlq": source + DLQ_SUFFIX,
                    "letters": len(letters),
                    "pending": len(pending),
                    "groups": dict(sorted(groups.items())),
                    "last": _when(last),
                }
            )
        return rows

    rows = _with_cluster(bootstrap, timeout, verbose, summarise)
    if output == "json":
        _print_json(rows)
        return
    if not rows:
        click.echo(f"no dead letters{f' for {topic}' if topic else ''}")
        return
    _print_table(
        ["TOPIC", "DLQ", "LETTERS", "NOT REPLAYED", "GROUPS", "LAST"],
        [(r["topic"], r["dlq"], r["letters"], r["pending"], _groups(r["groups"]), r["last"] or "-") for r in rows],
    )


@dlq.command()
@bootstrap_option
@timeout_option
@verbose_option
@output_option
@click.option("--values/--no-values", default=True, show_default=True, help="Show each letter's key, value, headers.")
@click.argument("topic")
def show(bootstrap: str, timeout: float, verbose: bool, output: str, values: bool, topic: str) -> None:
    """Each dead letter of TOPIC with its error headers: exception, message, original partition and offset, group,
    and when it was dead-lettered."""

    async def read(cluster: Cluster) -> list[DeadLetter]:
        await _source_topic(cluster, topic)
        return await cluster.dead_letters.list(topic)

    letters = _with_cluster(bootstrap, timeout, verbose, read)
    if output == "json":
        _print_json([_letter_document(letter) for letter in letters])
        return
    if not letters:
        click.echo(f"no dead letters for {topic}")
        return
    for letter in letters:
        origin = f"{letter.original_topic}-{letter.original_partition}"
        if letter.original_offset >= 0:
            origin += f" offset {letter.original_offset}"
        group = f"group {letter.consumer_group}" if letter.consumer_group else "from a producer"
        when = _when(letter.timestamp) or "-"
        click.echo(f"{topic}{DLQ_SUFFIX} {letter.dlq_partition}:{letter.dlq_offset}  {origin}  {group}  at {when}")
        click.echo(f"  {letter.exception_class}: {letter.exception_message}")
        if values:
            headers = " ".join(f"{name}={_text(value)}" for name, value in letter.headers)
            click.echo(
                f"  key={_text(letter.key)} value={_text(letter.value)}" + (f" headers: {headers}" if headers else "")
            )


@dlq.command()
@bootstrap_option
@timeout_option
@verbose_option
@output_option
@click.option("-g", "--group", default=None, help="Replay only this consumer group's letters.")
@click.option("--dry-run", is_flag=True, help="Show what would be replayed, and where, without writing anything.")
@click.argument("topic")
def replay(
    bootstrap: str, timeout: float, verbose: bool, output: str, group: str | None, dry_run: bool, topic: str
) -> None:
    """Deliver the dead letters of TOPIC not replayed yet again, each to the group that failed it (its retry topic
    TOPIC.GROUP.retry, which that group's KafkaLite consumers read; letters a producer wrote, which no group ever
    received, go back to TOPIC). Each letter is replayed once, however often this runs."""

    async def go(cluster: Cluster) -> list[Replay]:
        await _source_topic(cluster, topic)
        return await cluster.dead_letters.replay(topic, group=group, dry_run=dry_run)

    replays = _with_cluster(bootstrap, timeout, verbose, go)
    if output == "json":
        _print_json(
            {
                "topic": topic,
                "dry_run": dry_run,
                "replayed": [{**_letter_document(r.letter), "to": f"{r.topic}-{r.partition}"} for r in replays],
            }
        )
        return
    verb = "would replay" if dry_run else "replayed"
    if replays:
        _print_table(
            ["DLQ OFFSET", "GROUP", "TO", "EXCEPTION"],
            [
                (
                    f"{r.letter.dlq_partition}:{r.letter.dlq_offset}",
                    r.letter.consumer_group or "(producer)",
                    f"{r.topic}-{r.partition}",
                    r.letter.exception_class,
                )
                for r in replays
            ],
        )
    scope = f" of group {group}" if group else ""
    click.echo(f"{verb} {len(replays)} dead letter(s){scope} of {topic}")


# --- helpers ----------------------------------------------------------------------------------------------------


def _with_cluster(bootstrap: str, timeout: float, verbose: bool, action: Callable[[Cluster], Awaitable[T]]) -> T:
    """Connect, run `action`, close; any KafkaLite error or bad address is one line and exit status 2."""
    from kafkalite.client.network import connect

    client_log = logging.getLogger("aiokafka")
    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s"))
        client_log.setLevel(logging.DEBUG)
    else:
        handler = logging.NullHandler()  # its connection errors reach the user as our one line instead
    client_log.addHandler(handler)
    client_log.propagate = False

    async def main() -> T:
        async with connect(bootstrap, request_timeout_ms=int(timeout * 1000)) as cluster:
            return await action(cluster)

    try:
        return asyncio.run(main())
    except (KafkaLiteError, ValueError) as exc:
        fail(str(exc))


async def _source_topic(cluster: Cluster, topic: str) -> None:
    """A source topic must exist (or at least its DLQ, if the topic itself was deleted since)."""
    if not (await cluster.partition_counts([topic, topic + DLQ_SUFFIX])):
        raise UnknownTopicError(f"unknown topic {topic!r} on {cluster.bootstrap} (and no {topic}{DLQ_SUFFIX})")


def _letter_document(letter: DeadLetter) -> dict[str, Any]:
    return {
        "dlq_partition": letter.dlq_partition,
        "dlq_offset": letter.dlq_offset,
        "topic": letter.original_topic,
        "partition": letter.original_partition,
        "offset": letter.original_offset,
        "timestamp": letter.original_timestamp,
        "group": letter.consumer_group,
        "dead_lettered_at": _when(letter.timestamp),
        "exception": letter.exception_class,
        "message": letter.exception_message,
        "key": _text(letter.key),
        "value": _text(letter.value),
        "headers": {name: _text(value) for name, value in letter.headers},
    }


def _when(timestamp_ms: int) -> str | None:
    if timestamp_ms < 0:
        return None
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(data: bytes | None) -> str | None:
    """Bytes as text for a terminal or JSON: UTF-8 where it decodes, else `\\x..` escapes."""
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def _groups(groups: dict[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in groups.items())


def _print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2))


def _print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    listed = [list(row) for row in rows]
    for index, column in enumerate(columns):
        numeric = bool(listed) and all(isinstance(row[index], int) or row[index] is None for row in listed)
        table.add_column(column, justify="right" if numeric else "left", overflow="fold")
    for row in listed:
        table.add_row(*("-" if cell is None else str(cell) for cell in row))
    Console(highlight=False, soft_wrap=True).print(table)
