"""`kafkalite produce TOPIC`: one message per line from stdin or --file, to any Kafka cluster."""

from __future__ import annotations

import json
import os
import sys
from typing import BinaryIO

import click

from kafkalite.admin import ClientSettings, Cluster
from kafkalite.admin.produce import LineProducer, ProduceResult, check_partition
from kafkalite.cli._cluster import cluster_command, output_option, parse_configs
from kafkalite.cli._common import fail


@click.command()
@cluster_command
@output_option
@click.argument("topic")
@click.option(
    "-f", "--file", "files", multiple=True, type=click.Path(dir_okay=False), help="Read lines here, not stdin."
)
@click.option("-K", "--key-separator", metavar="SEP", help="Split each line at the first SEP into key and value.")
@click.option("-H", "--header", "headers", multiple=True, metavar="KEY=VALUE", help="Header on every message.")
@click.option("-p", "--partition", type=click.IntRange(0), help="Send every message to this partition.")
@click.option("--acks", type=click.Choice(["0", "1", "all"]), default="all", show_default=True)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on for files on a terminal).")
def produce(
    settings: ClientSettings,
    output: str,
    topic: str,
    files: tuple[str, ...],
    key_separator: str | None,
    headers: tuple[str, ...],
    partition: int | None,
    acks: str,
    progress: bool | None,
) -> None:
    """Produce one message per line of stdin (or of each --file) to TOPIC.

    \b
    Examples:
      echo 'hello' | kafkalite produce greetings
      kafkalite produce orders -K : -H source=cli <<< 'user-1:{"total": 12}'
      kafkalite produce orders --file orders.txt -K : --acks 1
      kafkalite produce orders -p 2 --output json < events.txt
    """
    header_pairs = [(name, value.encode()) for name, value in parse_configs(headers, "-H").items()]
    for path in files:
        if not os.path.isfile(path):
            fail(f"cannot read --file {path}: no such file")
    cluster = Cluster.connect(settings)
    check_partition(cluster, topic, partition)
    producer = LineProducer(
        settings,
        topic,
        partition=partition,
        acks=acks,
        key_separator=key_separator.encode() if key_separator else None,
        headers=header_pairs,
    )
    show = progress if progress is not None else bool(files) and sys.stderr.isatty()
    if files:
        for path in files:
            try:
                with open(path, "rb") as stream:
                    _send(producer, stream, path if show else None)
            except OSError as exc:
                fail(f"cannot read --file {path}: {exc.strerror or exc}")
    else:
        _send(producer, sys.stdin.buffer, None)
    result = producer.close()
    _report(result, topic, output)
    if result.failed:
        fail(f"{result.failed} of {result.messages} message(s) not delivered to {topic}: {result.first_error}")


def _send(producer: LineProducer, stream: BinaryIO, progress_of: str | None) -> None:
    if progress_of is None:
        producer.send(stream)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, TimeRemainingColumn(), transient=False, console=Console(stderr=True)) as bar:
        task = bar.add_task(os.path.basename(progress_of), total=os.path.getsize(progress_of))
        producer.send(stream, lambda read: bar.advance(task, read))


def _report(result: ProduceResult, topic: str, output: str) -> None:
    rate = result.messages / result.seconds if result.seconds else 0.0
    if output == "json":
        document = {
            "topic": topic,
            "messages": result.messages,
            "delivered": result.delivered,
            "failed": result.failed,
            "bytes": result.bytes,
            "seconds": round(result.seconds, 3),
        }
        click.echo(json.dumps(document))
        return
    click.echo(
        f"Produced {result.delivered} message(s), {result.bytes} bytes, to {topic} in {result.seconds:.2f} s "
        f"({rate:,.0f} msg/s)",
        err=True,
    )
