"""Options every over-the-wire command shares, and turning their failures into one line.

`@cluster_command` gives a command `-b/--bootstrap` (default `$KAFKALITE_BOOTSTRAP`, else `localhost:9092`),
repeatable `-X key=value` client settings under Kafka's property names, `--timeout` and `-v`, and hands it one
`ClientSettings` argument named `settings`. Inside, `AdminError` or a librdkafka `KafkaException` (and Ctrl-C, and a
closed stdout) end the command with one line on stderr and a non-zero status; nothing else is caught, so a bug still
shows its traceback. Importing this module loads librdkafka: only the lazily registered commands do.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal, TypeVar

import click
from confluent_kafka import KafkaException

from kafkalite.admin import AdminError, ClientSettings, parse_properties
from kafkalite.admin.connection import LIBRDKAFKA_LOG, kafka_message
from kafkalite.cli._common import fail

DEFAULT_BOOTSTRAP = "localhost:9092"
F = TypeVar("F", bound=Callable[..., Any])

output_option = click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one JSON document on stdout, for scripts.",
)


def default_bootstrap() -> str:
    return os.environ.get("KAFKALITE_BOOTSTRAP") or DEFAULT_BOOTSTRAP


def cluster_command(function: F) -> F:
    """Add the connection options and the one-line error handling to a command callback."""

    @click.option(
        "-b",
        "--bootstrap",
        default=default_bootstrap,
        show_default="$KAFKALITE_BOOTSTRAP or localhost:9092",
        metavar="HOST:PORT[,...]",
        help="Any Kafka cluster: kafkalite serve, Apache Kafka, Redpanda, ...",
    )
    @click.option(
        "-X",
        "properties",
        multiple=True,
        metavar="KEY=VALUE",
        help="Client setting under its Kafka/librdkafka name, e.g. -X security.protocol=SASL_SSL. Repeatable.",
    )
    @click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(0.1), help="Seconds per request.")
    @click.option("-v", "--verbose", is_flag=True, help="Show the Kafka client's own log lines on stderr.")
    @functools.wraps(function)
    def wrapper(
        *args: Any, bootstrap: str, properties: tuple[str, ...], timeout: float, verbose: bool, **kwargs: Any
    ) -> Any:
        if verbose:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | librdkafka | %(message)s"))
            LIBRDKAFKA_LOG.addHandler(handler)
            LIBRDKAFKA_LOG.setLevel(logging.DEBUG)
        with one_line_errors():
            settings = ClientSettings(bootstrap, parse_properties(properties), timeout)
            return function(*args, settings=settings, **kwargs)

    return wrapper  # type: ignore[return-value]


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt (see `stopped_by_signals`)."""


class stopped_by_signals:  # used as a context manager, reads as a phrase
    """Within it SIGINT and SIGTERM stop the command as Ctrl-C's `KeyboardInterrupt` or as `Terminated`, so the
    command's `finally` runs (a group consumer commits and leaves its group) and `one_line_errors` exits 130 or 143;
    but inside `held()`, around the librdkafka calls that may run a rebalance callback, a signal only sets `stop`
    and is raised when `held()` ends. The loop checks `stop` between polls.

    Raised inside librdkafka's assignment callback, a KeyboardInterrupt makes `Consumer.poll` fail with a SystemError
    and a traceback; raised anywhere else (a write to a stdout nobody reads fast enough) it ends the command at once.
    A signal the command was started with ignored (`kafkalite consume ... &` in a script) stays ignored. Only for
    loops that are safe to leave at any point: a command that must not stop halfway (a migration saving its offset
    map) keeps SIGTERM's default."""

    _HANDLED = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._received: int | None = None
        self._holding = False
        self._raised = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: object) -> None:
        if self._received is None:
            self._received = signum
        self.stop.set()
        if not self._holding:
            self._raise()

    def _raise(self) -> None:
        self._raised = True
        raise KeyboardInterrupt if self._received == signal.SIGINT else Terminated

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A signal in here is raised when the block ends (unless the block raised first, or it was raised before)."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        if self._received is not None and not self._raised:
            self._raise()

    def __enter__(self) -> stopped_by_signals:
        if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
            for signum in self._HANDLED:
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        for signum, previous in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        return False


class one_line_errors:  # used as a context manager, reads as a phrase
    """AdminError → `kafkalite: <message>` and exit 2; Ctrl-C → exit 130; SIGTERM inside `stopped_by_signals` →
    exit 143; a closed stdout (`| head`) → exit 0."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        if isinstance(exc, Terminated):
            sys.exit(143)
        if isinstance(exc, AdminError):
            fail(str(exc))
        if isinstance(exc, KafkaException):  # a client call the admin layer does not wrap
            fail(kafka_message(exc))
        if isinstance(exc, KeyboardInterrupt):
            sys.exit(130)
        if isinstance(exc, BrokenPipeError):
            # Nobody reads stdout any more; point it at /dev/null so the interpreter's final flush stays quiet.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(0)
        return False


def print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=False))


def parse_configs(pairs: tuple[str, ...], option: str = "-c") -> dict[str, str]:
    try:
        return parse_properties(pairs, option)
    except AdminError as exc:
        fail(str(exc))
