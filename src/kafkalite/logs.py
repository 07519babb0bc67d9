"""Logging in the seed's line format, to the console and optionally a file.

    2026-05-16 11:43:26 | INFO | broker | Routing producer=1 to topic=orders partition=1

Loggers are named `kafkalite.<component>`; the line shows the component alone. INFO tells the story (topics,
routing decisions, joins, rebalances, dead letters); DEBUG adds per-message detail. Nothing per message is logged at
INFO on the hot paths.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

LINE_FORMAT = "%(asctime)s | %(levelname)s | %(component)s | %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


class ComponentFormatter(logging.Formatter):
    """Shows `kafkalite.broker` as `broker`, and other libraries' loggers by their full name."""

    def format(self, record: logging.LogRecord) -> str:
        name = record.name
        record.component = name.removeprefix("kafkalite.") if name.startswith("kafkalite.") else name
        return super().format(record)


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
