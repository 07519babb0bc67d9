"""Small pieces every handler module shares: Kafka error codes from exceptions, and fixed values."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Final

from kafkalite.errors import KafkaLiteError

if TYPE_CHECKING:
    from kafkalite.broker import Broker

log = logging.getLogger("kafkalite.server")

NONE: Final = 0
UNKNOWN_SERVER_ERROR: Final = -1
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
INVALID_REQUEST: Final = 42
UNSUPPORTED_VERSION: Final = 35
# Not `Final`: the compiled Produce and Fetch handlers read it, and mypyc copies a `Final` literal of an interpreted
# module into their build, where an edit here would not reach (`protocol.native`).
UNKNOWN_TOPIC_ID = 100
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


def topic_name_by_id(broker: Broker, topic_id: uuid.UUID | None) -> str | None:
    """The name of the topic with `topic_id`, or None when no topic has it: the answer is then UNKNOWN_TOPIC_ID.
    The all-zero id names no topic (kio reads it as None)."""
    if topic_id is None or topic_id.int == 0:
        return None
    topic = broker.topics_by_id_number.get(topic_id.int)  # `handlers.fetch._requested_names` has the same rule inline
    return None if topic is None else topic.name
