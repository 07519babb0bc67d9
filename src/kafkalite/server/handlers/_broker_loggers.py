"""The BROKER_LOGGER config resource (type 8): the broker's loggers and their levels, as Kafka's `Log4jController`.

DescribeConfigs lists "root" (Python's root logger) and every `kafkalite.*` logger with its effective level under
Kafka's level names (WARNING is WARN, CRITICAL is FATAL); IncrementalAlterConfigs SETs a level or DELETEs it (the
logger then inherits its parent's). Kafka's rules: the resource is named by this node's id; only SET and DELETE
apply (INVALID_REQUEST); an unknown logger or level is INVALID_CONFIG; the root logger's level cannot be removed
(INVALID_REQUEST). Python has no TRACE: it sets DEBUG. Levels live in the process's `logging` module, not in any
handler, and last until the broker process exits, as Kafka's do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

ROOT = "root"
KAFKA_LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
                "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}  # fmt: skip
SET, DELETE = 0, 1
INVALID_CONFIG = 40
INVALID_REQUEST = 42


def _kafka_level(level: int) -> str:
    return {logging.WARNING: "WARN", logging.CRITICAL: "FATAL"}.get(level, logging.getLevelName(level))


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    known = logging.Logger.manager.loggerDict.get(name)
    return known if isinstance(known, logging.Logger) and name.startswith("kafkalite") else None


def loggers() -> list[tuple[str, str]]:
    """(logger name, effective level in Kafka's words), root first, then the `kafkalite` tree by name."""
    names = sorted(n for n in logging.Logger.manager.loggerDict if n == "kafkalite" or n.startswith("kafkalite."))
    found = [(ROOT, logging.getLogger())] + [(n, logging.getLogger(n)) for n in names]
    return [(name, _kafka_level(logger.getEffectiveLevel())) for name, logger in found]


def check_changes(changes: Iterable[Any]) -> tuple[int, str | None]:
    """Kafka's checks of a batch of (name, config_operation, value) before any level changes."""
    for change in changes:
        if change.config_operation not in (SET, DELETE):
            return INVALID_REQUEST, f"{change.config_operation} operation is not allowed for the broker logger resource"
        if _logger(change.name) is None:
            return INVALID_CONFIG, f"Logger {change.name} does not exist!"
        if change.config_operation == DELETE and change.name == ROOT:
            return INVALID_REQUEST, "Removing the log level of the root logger is not allowed"
        if change.config_operation == SET and (change.value or "").upper() not in KAFKA_LEVELS:
            return INVALID_CONFIG, (
                f"Cannot set the log level of {change.name} to {change.value} as it is not a supported log level. "
                f"Valid log levels are {', '.join(KAFKA_LEVELS)}"
            )
    return 0, None


def apply_changes(changes: Iterable[Any]) -> None:
    """Apply changes that passed `check_changes`."""
    for change in changes:
        logger = _logger(change.name)
        assert logger is not None
        if change.config_operation == SET:
            logger.setLevel(KAFKA_LEVELS[change.value.upper()])
        else:
            logger.setLevel(logging.NOTSET)
