"""`kafkalite serve`: the Kafka wire protocol on a TCP port until SIGINT or SIGTERM.

The ready line `KafkaLite ready on HOST:PORT (data: DIR, fsync ...)` goes to stdout once the listeners are bound, so
a parent process (a test harness, a supervisor) can wait for it and read the chosen port. With the HTTP listener on
(the default, `--http-port 9644`; `--no-http` turns it off) the line ends with `; console http://HOST:PORT/`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kafkalite.cli._common import LOG_LEVELS, fail, run
from kafkalite.errors import KafkaLiteError
from kafkalite.logs import configure_logging
from kafkalite.protocol.kio_import import import_kio_without_hypothesis

if TYPE_CHECKING:
    from kafkalite.broker import BrokerConfig


@click.command()
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
@click.option(
    "--log-cleaner-io-max-bytes-per-second",
    type=click.FloatRange(min=1, min_open=False),
    default=None,
    help="Cap on the log cleaner's read plus write rate (default: no cap).",
)
@click.option(
    "--transaction-max-timeout-ms",
    default=900_000,
    show_default=True,
    type=click.IntRange(1),
    help="transaction.max.timeout.ms: the longest transaction.timeout.ms a producer may ask for.",
)
@click.option(
    "--transaction-abort-interval-ms",
    default=10_000,
    show_default=True,
    type=click.IntRange(1),
    help="How often transactions past their timeout are looked for and aborted.",
)
@click.option("--log-level", type=LOG_LEVELS, default="INFO", show_default=True)
@click.option("--log-file", default=None, type=click.Path(dir_okay=False), help="Also write log lines here.")
@click.option(
    "--http-port",
    default=9644,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Web console and /metrics port; 0 picks a free port.",
)
@click.option(
    "--http-host", default="localhost", show_default=True, help="Console address; a non-loopback one serves others."
)
@click.option("--no-http", is_flag=True, help="No web console and no /metrics.")
def serve(
    host: str,
    port: int,
    advertised_host: str | None,
    data_dir: str,
    fsync: str,
    auto_create_topics: bool,
    num_partitions: int,
    log_cleaner_io_max_bytes_per_second: float | None,
    transaction_max_timeout_ms: int,
    transaction_abort_interval_ms: int,
    log_level: str,
    log_file: str | None,
    http_port: int,
    http_host: str,
    no_http: bool,
) -> None:
    """Serve the Kafka wire protocol (and the web console with /metrics) until SIGINT or SIGTERM."""
    configure_logging(log_level, log_file)
    _raise_open_file_limit()
    import_kio_without_hypothesis()
    if data_dir != "memory" and Path(data_dir).exists() and not Path(data_dir).is_dir():
        fail(f"cannot use --data-dir {data_dir}: it is a file, not a directory")
    from kafkalite.broker import BrokerConfig

    config = BrokerConfig(
        data_dir=None if data_dir == "memory" else Path(data_dir),
        fsync=fsync == "always",
        auto_create_topics=auto_create_topics,
        default_partitions=num_partitions,
        log_cleaner_io_max_bytes_per_second=log_cleaner_io_max_bytes_per_second,
        transaction_max_timeout_ms=transaction_max_timeout_ms,
        transaction_abort_interval_ms=transaction_abort_interval_ms,
    )
    http = None if no_http else (http_host, http_port)
    try:
        run(_serve(config, host, port, advertised_host, http))
    except KafkaLiteError as exc:
        fail(str(exc))
    except _ListenError as exc:
        fail(str(exc))
    except OSError as exc:
        if exc.filename is not None:  # the data directory (or a file in it), not the listening socket
            fail(f"cannot use --data-dir {data_dir}: {exc.filename}: {exc.strerror or exc}")
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")


def _raise_open_file_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit: a broker holds one descriptor per partition plus one per connection."""
    try:
        import resource
    except ImportError:  # not on Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # macOS refuses RLIM_INFINITY; keep what we have
        logging.getLogger("kafkalite.server").debug("open-file limit stays %d (raising to %d: %s)", soft, hard, exc)
        return
    logging.getLogger("kafkalite.server").debug("open-file limit raised from %d to %d", soft, hard)


class _ListenError(Exception):
    """A listener could not bind: one line for the user."""


async def _serve(
    config: BrokerConfig, host: str, port: int, advertised_host: str | None, http: tuple[str, int] | None
) -> None:
    from kafkalite.broker import Broker
    from kafkalite.server import KafkaServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    async with Broker(config=config) as broker:
        server = KafkaServer(broker, host, port, advertised_host=advertised_host)
        try:
            await server.start()
        except OSError as exc:
            raise _ListenError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
        console = None
        if http is not None:
            from kafkalite.http import HttpServer  # only when asked: aiohttp and friends cost start-up time

            console = HttpServer(broker, http[0], http[1], listeners=[f"kafka://{server.bootstrap}"])
            try:
                await console.start()
            except OSError as exc:
                await server.close()
                raise _ListenError(f"cannot serve the console on {http[0]}:{http[1]}: {exc.strerror or exc}") from None
        where = config.data_dir if config.data_dir is not None else "memory only"
        fsync = "fsync before acks=all" if config.fsync else "no fsync"
        web = f"; console {console.url}" if console is not None else ""
        print(f"KafkaLite ready on {server.advertised_host}:{server.port} (data: {where}, {fsync}){web}", flush=True)
        await stop.wait()
        if console is not None:
            console.kafka_ready = False  # /readyz says 503 from the first moment of the shutdown
        await server.close()
        if console is not None:
            await console.close()
