"""Logging in the seed's line format, to the console and optionally a file.

    2026-05-16 11:43:26 | INFO | broker | Routing producer=1 to topic=orders partition=1

Loggers are named `kafkalite.<component>`; the line shows the component alone. INFO tells the story (topics,
routing decisions, joins, rebalances, dead letters); DEBUG adds per-message detail. Nothing per message is logged at
INFO on the hot paths.

One line per event, whatever clients send: messages quote client-supplied names (topics, transactional ids, client
ids), so the formatter escapes control characters in the message (a newline in a topic name cannot forge a second
log line) and cuts a message past `MAX_MESSAGE_CHARS`, saying how much it left out (a 64 KB name cannot make a
64 KB line). A traceback, which the formatter appends after the message, keeps its lines.
"""

from __future__ import annotations

import copy
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

LINE_FORMAT = "%(asctime)s | %(levelname)s | %(component)s | %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
MAX_MESSAGE_CHARS = 2048
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F) if code != 0x09} | {0x0A: "\\n", 0x0D: "\\r"}


def one_line(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`message` with control characters escaped, cut after `limit` characters."""
    if len(message) > limit:
        message = f"{message[:limit]}... [{len(message) - limit} more characters]"
    return message.translate(_ESCAPES)


class ComponentFormatter(logging.Formatter):
    """Shows `kafkalite.broker` as `broker`, and other libraries' loggers by their full name."""

    def format(self, record: logging.LogRecord) -> str:
        name = record.name
        record.component = name.removeprefix("kafkalite.") if name.startswith("kafkalite.") else name
        return super().format(record)

    def formatMessage(self, record: logging.LogRecord) -> str:
        shown = copy.copy(record)  # other handlers of the record see it unchanged
        shown.message = one_line(record.message)
        return super().formatMessage(shown)


def configure_logging(level: str | int = "INFO", log_file: str | Path | None = None) -> None:
    """Send KafkaLite's log lines to stderr (and `log_file`), replacing handlers a previous call installed."""
    root = logging.getLogger("kafkalite")
    root.setLevel(level if isinstance(level, int) else level.upper())
    for handler in list(root.handlers):
        if getattr(handler, "_kafkalite", False):
            root.removeHandler(handler)
            handler.close()
    formatter = ComponentFormatter(LINE_FORMAT, DATE_FORMAT)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
        handler._kafkalite = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.propagate = False


class RateLimitedWarnings:
    """WARNING lines that a flood of events cannot turn into a flood of lines.

    At most `burst` lines per `period_s` go out; past that, events are only counted, and the first line let through
    after the period ends says how many were left out. For events a stranger can cause at will (a failed TLS
    handshake, a refused login), so that a scanner or a password guesser cannot fill the disk or bury other lines.
    `clock` is monotonic seconds (a parameter for tests).
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = 20,
        period_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._burst = burst
        self._period_s = period_s
        self._clock = clock
        self._window_start = -period_s
        self._in_window = 0
        self.suppressed = 0  # events not logged since the last line that went out

    def warning(self, message: str, *args: object) -> bool:
        """Log `message % args` unless this period's lines are used up; True when it was logged."""
        now = self._clock()
        if now - self._window_start >= self._period_s:
            self._window_start = now
            self._in_window = 0
        if self._in_window >= self._burst:
            self.suppressed += 1
            return False
        self._in_window += 1
        if self.suppressed:
            message += " (%d more like it not logged in the last %.0f s)"
            args = (*args, self.suppressed, self._period_s)
            self.suppressed = 0
        self._logger.warning(message, *args)
        return True
