"""The `kafkalite` command: argument parsing and output only; the work lives in the layers below.

    kafkalite serve [--host H] [--port 9092] [--data-dir ./data] [--fsync always|never] ...
    kafkalite demo  [--messages N] [--data-dir DIR]

Bad input gets one line on stderr and a non-zero exit status; tracebacks are for bugs only.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

import click
from rich.console import Console

from kafkalite.broker import Broker as CoreBroker
from kafkalite.broker import BrokerConfig
from kafkalite.demo import DemoSettings, run_demo
from kafkalite.errors import KafkaLiteError
from kafkalite.logs import configure_logging
from kafkalite.server import KafkaServer

LOG_LEVELS = click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False)


def _run(coroutine: object) -> None:
    """Run on uvloop when it is installed (it is on Linux and macOS), else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(coroutine)  # type: ignore[arg-type]
    else:
        uvloop.run(coroutine)  # type: ignore[arg-type]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafkalite")
def main() -> None:
    """KafkaLite: a Kafka-compatible event-log broker in Python."""


@main.command()
@click.option("--host", default="localhost", show_default=True, help="Address to listen on.")
@click.option("--port", default=9092, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option("--advertised-host", default=None, help="Host clients are told to connect to (default: --host).")
@click.option("--data-dir", default="./data", show_default=True, help="Where logs live; 'memory' keeps none.")
@click.option(
    "--fsync",
    type=click.Choice(["always", "never"]),
    default="always",
    show_default=True,
    help="always: acks=all is answered after fsync (group commit). never: for throwaway test brokers.",
)
@click.option("--auto-create-topics/--no-auto-create-topics", default=True, show_default=True)
@click.option("--num-partitions", default=1, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--log-level", type=LOG_LEVELS, default="INFO", show_default=True)
@click.option("--log-file", default=None, type=click.Path(dir_okay=False), help="Also write log lines here.")
def serve(
    host: str,
    port: int,
    advertised_host: str | None,
    data_dir: str,
    fsync: str,
    auto_create_topics: bool,
    num_partitions: int,
    log_level: str,
    log_file: str | None,
) -> None:
    """Serve the Kafka wire protocol until SIGINT or SIGTERM."""
    configure_logging(log_level, log_file)
    config = BrokerConfig(
        data_dir=None if data_dir == "memory" else Path(data_dir),
        fsync=fsync == "always",
        auto_create_topics=auto_create_topics,
        default_partitions=num_partitions,
    )
    try:
        _run(_serve(config, host, port, advertised_host))
    except KafkaLiteError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")


async def _serve(config: BrokerConfig, host: str, port: int, advertised_host: str | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    async with CoreBroker(config=config) as broker:
        server = KafkaServer(broker, host, port, advertised_host=advertised_host)
        await server.start()
        where = config.data_dir if config.data_dir is not None else "memory only"
        fsync = "fsync before acks=all" if config.fsync else "no fsync"
        Console(stderr=False, highlight=False).print(  # soft_wrap: one line, however long the data dir's path
            f"KafkaLite ready on {server.advertised_host}:{server.port} (data: {where}, {fsync})", soft_wrap=True
        )
        sys.stdout.flush()
        await stop.wait()
        await server.close()


@main.command()
@click.option("--messages", default=12, show_default=True, type=click.IntRange(3, 100_000), help="Per producer.")
@click.option("--data-dir", default=None, help="Keep the demo's log here (default: in memory).")
@click.option("--log-level", type=LOG_LEVELS, default="INFO", show_default=True)
@click.option("--log-file", default=None, type=click.Path(dir_okay=False))
def demo(messages: int, data_dir: str | None, log_level: str, log_file: str | None) -> None:
    """Run the seed's story: producers, two groups, a rebalance, a poison message, the DLQ and its replay."""
    configure_logging(log_level, log_file)
    settings = DemoSettings(messages_per_producer=messages, data_dir=Path(data_dir) if data_dir else None)
    try:
        summary = asyncio.run(run_demo(settings))
    except KafkaLiteError as exc:
        _fail(str(exc))
    console = Console(highlight=False)
    console.print(summary.as_table())


def _fail(message: str) -> None:
    click.echo(f"kafkalite: {message}", err=True)
    sys.exit(2)


if __name__ == "__main__":
    main()
