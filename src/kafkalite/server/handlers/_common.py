"""Small pieces every handler module shares: Kafka error codes from exceptions, and fixed values."""

from __future__ import annotations

import logging
import uuid
from typing import Final

from kafkalite.errors import KafkaLiteError

log = logging.getLogger("kafkalite.server")

NONE: Final = 0
UNKNOWN_SERVER_ERROR: Final = -1
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
INVALID_REQUEST: Final = 42
UNSUPPORTED_VERSION: Final = 35
UNKNOWN_TOPIC_ID: Final = 100
INT32_MIN: Final = -(2**31)  # "authorized operations not requested"
ZERO_UUID: Final = uuid.UUID(int=0)


def error_code(exc: Exception) -> int:
    """The Kafka error code for an exception a broker call raised; unexpected ones are logged as server errors."""
    if isinstance(exc, KafkaLiteError):
        return exc.error_code
    log.exception("Unexpected error in a broker call, answered as UNKNOWN_SERVER_ERROR", exc_info=exc)
    return UNKNOWN_SERVER_ERROR


def error_message(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
