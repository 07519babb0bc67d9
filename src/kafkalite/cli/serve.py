"""`kafkalite serve`: the Kafka wire protocol on a TCP port until SIGINT or SIGTERM.

Settings come under Kafka's broker config names from `--config server.properties` and `--override key=value`
(`server.properties`); `--host/--port/--data-dir` are the one-PLAINTEXT-listener shorthand.

The ready line `KafkaLite ready on HOST:PORT (data: DIR, fsync ...)` goes to stdout once the listeners are bound (the
first listener's address), so a parent process (a test harness, a supervisor) can wait for it and read the chosen
port; one line `KafkaLite listener NAME on HOST:PORT` per listener follows. With the HTTP listener on (the default,
`--http-port 9644`; `--no-http` turns it off) the ready line ends with `; console http://HOST:PORT/`: the address is
bound by then, and the console itself loads when its first connection arrives (`kafkalite.http.on_demand`). When the
listeners authenticate (SASL) or the authorizer is on, the console asks for a login with the broker's credentials;
`--http-tls` serves it over HTTPS with the first TLS listener's keystore.
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
    from kafkalite.security.settings import TlsSettings
    from kafkalite.server.properties import ServeSettings


@click.command()
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False), help="A server.properties.")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE", help="Set one Kafka config (repeatable).")
@click.option("--host", default="localhost", show_default=True, help="Address to listen on (one PLAINTEXT listener).")
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
@click.option(
    "--http-tls", is_flag=True, help="Serve the console over HTTPS with the first TLS listener's ssl.keystore settings."
)
@click.pass_context
def serve(
    ctx: click.Context,
    config_file: str | None,
    overrides: tuple[str, ...],
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
    http_tls: bool,
) -> None:
    """Serve the Kafka wire protocol (and the web console with /metrics) until SIGINT or SIGTERM.

    Settings use Kafka's broker config names (listeners, advertised.listeners, log.dirs, num.partitions, ssl.*,
    sasl.enabled.mechanisms, super.users, ...), from --config and then each --override in order. The flags after
    --override are shorthands; one given on the command line wins over the same setting from the file.
    """
    configure_logging(log_level, log_file)
    _raise_open_file_limit()
    import_kio_without_hypothesis()
    from kafkalite.server.properties import load, parse_override, read_properties

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE

    try:
        settings = read_properties(Path(config_file)) if config_file else {}
        for text in overrides:
            key, value = parse_override(text)
            settings[key] = value
        shorthand_listener = given("host") or given("port") or given("advertised_host")
        if shorthand_listener and ("listeners" in settings or "advertised.listeners" in settings):
            fail("--host/--port/--advertised-host and the listeners settings are two ways to say one thing: use one")
        if shorthand_listener or "listeners" not in settings:
            settings["listeners"] = f"PLAINTEXT://{_bracketed(host)}:{port}"
            if advertised_host:
                settings["advertised.listeners"] = f"PLAINTEXT://{_bracketed(advertised_host)}:{port}"
        if given("data_dir") or ("log.dirs" not in settings and "log.dir" not in settings):
            settings.pop("log.dir", None)
            settings["log.dirs"] = data_dir
        if given("auto_create_topics") or "auto.create.topics.enable" not in settings:
            settings["auto.create.topics.enable"] = str(auto_create_topics).lower()
        if given("num_partitions") or "num.partitions" not in settings:
            settings["num.partitions"] = str(num_partitions)
        if given("transaction_max_timeout_ms") or "transaction.max.timeout.ms" not in settings:
            settings["transaction.max.timeout.ms"] = str(transaction_max_timeout_ms)
        interval = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
        if given("transaction_abort_interval_ms") or interval not in settings:
            settings[interval] = str(transaction_abort_interval_ms)
        if log_cleaner_io_max_bytes_per_second is not None:
            settings["log.cleaner.io.max.bytes.per.second"] = str(log_cleaner_io_max_bytes_per_second)
        serve_settings = load(settings, fsync=fsync == "always")
    except KafkaLiteError as exc:
        fail(str(exc))
    data = serve_settings.broker.data_dir
    if data is not None and data.exists() and not data.is_dir():
        fail(f"cannot use --data-dir {data}: it is a file, not a directory")
    http = None if no_http else (http_host, http_port)
    http_keystore = None
    if http_tls:
        http_keystore = next((listener.tls for listener in serve_settings.listeners if listener.tls), None)
        if http_keystore is None:
            fail("--http-tls uses a TLS listener's ssl.keystore settings, and no listener has them")
    try:
        run(_serve(serve_settings, http, http_keystore))
    except KafkaLiteError as exc:
        fail(str(exc))
    except _ListenError as exc:
        fail(str(exc))
    except OSError as exc:
        if exc.filename is not None:  # the data directory (or a file in it), not a listening socket
            fail(f"cannot use --data-dir {data}: {exc.filename}: {exc.strerror or exc}")
        fail(f"cannot serve: {exc.strerror or exc}")


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


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


async def _serve(settings: ServeSettings, http: tuple[str, int] | None, http_tls: TlsSettings | None = None) -> None:
    from kafkalite.broker import Broker
    from kafkalite.server import KafkaServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    config = settings.broker
    async with Broker(config=config) as broker:
        server = KafkaServer(
            broker,
            listeners=settings.listeners,
            security_settings=settings.security,
            max_frame_bytes=settings.max_frame_bytes,
            settings=settings.server_settings,
        )
        try:
            await server.start()
        except OSError as exc:
            addresses = ", ".join(f"{listener.host}:{listener.port}" for listener in settings.listeners)
            raise _ListenError(f"cannot serve on {addresses}: {exc.strerror or exc}") from None
        console = None
        if http is not None:
            from kafkalite.http.on_demand import OnDemandConsole  # binds now; aiohttp on the first connection

            try:
                console = OnDemandConsole(
                    broker,
                    http[0],
                    http[1],
                    listeners=[f"kafka://{server.bootstrap_of(listener.name)}" for listener, _ in server.listeners],
                    security=server.security,
                    kafka_protocols=[listener.protocol for listener, _ in server.listeners],
                    tls=http_tls,
                )
            except OSError as exc:
                await server.close()
                raise _ListenError(
                    f"cannot serve the console on {http[0]}:{http[1]}: {exc.strerror or exc} "
                    "(--http-port 0 picks a free port, --no-http turns the console off)"
                ) from None
            console.watch()
        where = config.data_dir if config.data_dir is not None else "memory only"
        fsync = "fsync before acks=all" if config.fsync else "no fsync"
        web = f"; console {console.url}" if console is not None else ""
        # The first line keeps one format whatever the listeners (scripts parse it); each listener follows.
        print(f"KafkaLite ready on {server.bootstrap} (data: {where}, {fsync}){web}", flush=True)
        for listener, _ in server.listeners:
            print(f"KafkaLite listener {listener.name} on {server.bootstrap_of(listener.name)}", flush=True)
        await stop.wait()
        if console is not None:
            console.kafka_ready = False  # /readyz says 503 from the first moment of the shutdown
        await server.close()
        if console is not None:
            await console.close()
