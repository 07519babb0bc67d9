"""`kafkalite demo`: the seed's story on the embedded broker, ending with a summary table."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from kafkalite.cli._common import LOG_LEVELS, fail
from kafkalite.errors import KafkaLiteError
from kafkalite.logs import configure_logging


@click.command()
@click.option("--messages", default=12, show_default=True, type=click.IntRange(3, 100_000), help="Per producer.")
@click.option("--data-dir", default=None, help="Keep the demo's log here (default: in memory).")
@click.option("--log-level", type=LOG_LEVELS, default="INFO", show_default=True)
@click.option("--log-file", default=None, type=click.Path(dir_okay=False))
@click.option(
    "-b",
    "--bootstrap",
    default=None,
    metavar="HOST:PORT",
    help="Run the same story against this Kafka cluster (kafkalite serve, Apache Kafka, ...) instead of embedded.",
)
def demo(messages: int, data_dir: str | None, log_level: str, log_file: str | None, bootstrap: str | None) -> None:
    """Run the seed's story: producers, two groups, a rebalance, a poison message, the DLQ and its replay to the
    group that failed it."""
    from rich.console import Console

    from kafkalite.demo import DemoSettings, run_demo

    configure_logging(log_level, log_file)
    if bootstrap is not None:
        from kafkalite.client.network import parse_bootstrap

        try:
            parse_bootstrap(bootstrap)
        except ValueError as exc:
            fail(str(exc))
    settings = DemoSettings(
        messages_per_producer=messages, data_dir=Path(data_dir) if data_dir else None, bootstrap=bootstrap
    )
    try:
        summary = asyncio.run(run_demo(settings))
    except KafkaLiteError as exc:
        fail(str(exc))
    console = Console(highlight=False)
    console.print(summary.as_table())
