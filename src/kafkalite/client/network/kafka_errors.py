"""aiokafka's exceptions as KafkaLite's, so code written against the embedded broker catches the same classes.

aiokafka names a broker's answer by class (its `errno` is the Kafka code). The codes the embedded broker also raises
map to the same `kafkalite.errors` class; connection failures become `UnreachableError`; anything else becomes
`ClusterError` with aiokafka's text and the Kafka code.
"""

from __future__ import annotations

from aiokafka import errors as kafka

from kafkalite.errors import (
    ClusterError,
    InvalidConfigError,
    InvalidTopicError,
    KafkaLiteError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    TopicExistsError,
    UnknownTopicError,
    UnreachableError,
)

_BY_CODE: dict[int, type[KafkaLiteError]] = {
    3: UnknownTopicError,  # UNKNOWN_TOPIC_OR_PARTITION
    10: RecordTooLargeError,  # MESSAGE_TOO_LARGE
    17: InvalidTopicError,  # INVALID_TOPIC_EXCEPTION
    36: TopicExistsError,  # TOPIC_ALREADY_EXISTS
    37: InvalidConfigError,  # INVALID_PARTITIONS
    38: InvalidConfigError,  # INVALID_REPLICATION_FACTOR
    40: InvalidConfigError,  # INVALID_CONFIG
}


def translate(exc: BaseException, what: str) -> KafkaLiteError:
    """`exc` (raised by aiokafka while doing `what`) as a KafkaLite exception naming `what`."""
    if isinstance(exc, KafkaLiteError):
        return exc
    if isinstance(exc, kafka.KafkaConnectionError | ConnectionError | OSError):
        return UnreachableError(f"{what}: no broker answered")
    if isinstance(exc, kafka.KafkaTimeoutError | TimeoutError):
        return UnreachableError(f"{what}: the cluster did not answer in time")
    code = getattr(exc, "errno", -1)
    text = str(exc) or getattr(exc, "description", "") or type(exc).__name__
    if code == 1:
        return OffsetOutOfRangeError(-1, -1, -1)
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(f"{what}: {text}")
    return ClusterError(f"{what}: {text} (Kafka error {code})", code)
