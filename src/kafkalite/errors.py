"""The one exception tree of KafkaLite's Python API.

Every exception KafkaLite raises on purpose derives from `KafkaLiteError`. Where a Kafka error code exists for the
same condition, the class carries it as `error_code`, so the wire server can turn the exception into data without
a lookup table of its own::

    KafkaLiteError
    ├── CorruptRecordError           bytes that are not a valid RecordBatch v2 (code 2, CORRUPT_MESSAGE)
    ├── ProtocolError                bytes that break the wire protocol: the server closes that connection
    ├── StorageError                 the disk refused a write, fsync or open
    │   └── DataDirectoryInUseError  another broker holds the data directory's lock
    ├── OffsetOutOfRangeError        read below the log start or past the log end (code 1)
    ├── TopicError
    │   ├── UnknownTopicError        no such topic (code 3, UNKNOWN_TOPIC_OR_PARTITION)
    │   ├── UnknownPartitionError    the topic exists, the partition does not (code 3)
    │   ├── TopicExistsError         create_topic on a name in use (code 36, TOPIC_ALREADY_EXISTS)
    │   └── InvalidTopicError        a name Kafka would refuse, or an internal topic (code 17, INVALID_TOPIC_EXCEPTION)
    ├── InvalidConfigError           bad partitions count, config key or value (code 40, INVALID_CONFIG)
    ├── RetriableError               try again later; the producer retries these
    │   └── PartitionFullError       partition capacity reached (code 89, THROTTLING_QUOTA_EXCEEDED)
    ├── ProducerFencedError          idempotent-producer state says no (sequence or epoch)
    │   ├── DuplicateSequenceError   the batch was already appended; carries the original offsets
    │   ├── OutOfOrderSequenceError  a gap in the sequence (code 45)
    │   ├── InvalidProducerEpochError  an epoch older than the one the broker knows (code 47)
    │   ├── CoordinatorFencedError   a transaction marker from an older coordinator (code 52)
    │   └── UnknownProducerIdError   a producer id this broker never handed out (code 59)
    ├── RecordTooLargeError          a batch above max.message.bytes (code 10, MESSAGE_TOO_LARGE)
    ├── InvalidRecordError           a key, value or header that is not bytes (also a TypeError), a keyless record on
    │                                a compacted topic (code 87, INVALID_RECORD)
    ├── GroupError                   consumer-group protocol outcomes, each with its Kafka code
    ├── ClusterError                 a Kafka cluster reached over the network failed a request (`kafkalite.connect`)
    │   └── UnreachableError         no broker answered at the bootstrap address
    ├── TransactionError             the transaction coordinator's refusals (INVALID_TXN_STATE 48,
    │                                CONCURRENT_TRANSACTIONS 51, ...), each with its Kafka code; a fenced
    │                                transactional producer gets ProducerFencedError (90) instead
    ├── AuthenticationError          SASL credentials refused (code 58, SASL_AUTHENTICATION_FAILED)
    ├── AuthorizationError           the ACLs refuse the operation; its code names the resource type
    │                                (29 TOPIC_, 30 GROUP_, 31 CLUSTER_, 53 TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...)
    └── ClosedError                  the broker, producer or consumer is closed

`kafkalite.errors` imports nothing of KafkaLite's, so every layer (protocol included) may raise from this tree.
"""

from __future__ import annotations


class KafkaLiteError(Exception):
    """Base of everything KafkaLite raises on purpose."""

    error_code: int = -1  # UNKNOWN_SERVER_ERROR
    retriable: bool = False


class CorruptRecordError(KafkaLiteError):
    """Bytes that are not a valid RecordBatch: truncated, bad length, wrong magic, CRC mismatch, bad varint."""

    error_code = 2


class ProtocolError(KafkaLiteError):
    """Bytes that break the wire protocol; the only safe answer is to close the connection."""


class StorageError(KafkaLiteError):
    """The file system refused an open, write, fsync or rename; the log is left valid up to the last good batch."""

    error_code = 56  # KAFKA_STORAGE_ERROR


class DataDirectoryInUseError(StorageError):
    """Another broker holds the data directory's lock (`storage.directory_lock`); this one must not open it."""


class OffsetOutOfRangeError(KafkaLiteError):
    """A read below the log start offset or past the log end offset."""

    error_code = 1

    def __init__(self, offset: int, log_start: int, log_end: int) -> None:
        super().__init__(f"offset {offset} is out of range [{log_start}, {log_end}]")
        self.offset = offset
        self.log_start = log_start
        self.log_end = log_end


class TopicError(KafkaLiteError):
    """Something about a topic's existence or name."""


class UnknownTopicError(TopicError):
    error_code = 3


class UnknownPartitionError(TopicError):
    error_code = 3


class TopicExistsError(TopicError):
    error_code = 36


class InvalidTopicError(TopicError):
    error_code = 17


class InvalidConfigError(KafkaLiteError):
    error_code = 40


class RetriableError(KafkaLiteError):
    """A condition that may clear by itself; callers retry with backoff."""

    retriable = True


class PartitionFullError(RetriableError):
    """The partition reached `max.partition.messages` or `max.partition.bytes`."""

    error_code = 89


class ProducerFencedError(KafkaLiteError):
    """The idempotent-producer checks refused a batch."""

    error_code = 90  # PRODUCER_FENCED


class DuplicateSequenceError(ProducerFencedError):
    """The batch repeats one already appended; `base_offset` is where the original landed."""

    error_code = 46  # DUPLICATE_SEQUENCE_NUMBER (answered as success on the wire)

    def __init__(self, message: str, base_offset: int) -> None:
        super().__init__(message)
        self.base_offset = base_offset


class OutOfOrderSequenceError(ProducerFencedError):
    error_code = 45


class InvalidProducerEpochError(ProducerFencedError):
    error_code = 47


class CoordinatorFencedError(ProducerFencedError):
    """A transaction marker from a coordinator older than the one that wrote the producer's last marker."""

    error_code = 52  # TRANSACTION_COORDINATOR_FENCED


class UnknownProducerIdError(ProducerFencedError):
    """A batch names a producer id that no InitProducerId of this broker returned: ids are the broker's to hand out."""

    error_code = 59  # UNKNOWN_PRODUCER_ID


class RecordTooLargeError(KafkaLiteError):
    error_code = 10


class InvalidRecordError(KafkaLiteError, TypeError):
    """`record_errors`: (index of the record in its batch, why), for Produce's record_errors (v8+)."""

    error_code = 87

    def __init__(self, message: str, *, record_errors: tuple[tuple[int, str], ...] = ()) -> None:
        super().__init__(message)
        self.record_errors = record_errors


class GroupError(KafkaLiteError):
    """A consumer-group protocol outcome (stale generation, unknown member, rebalance in progress, ...)."""

    def __init__(self, message: str, error_code: int) -> None:
        super().__init__(message)
        self.error_code = error_code


class ClusterError(KafkaLiteError):
    """A Kafka cluster reached over the network (`kafkalite.connect`) failed a request; `error_code` is the Kafka
    code when the cluster sent one."""

    def __init__(self, message: str, error_code: int = -1) -> None:
        super().__init__(message)
        self.error_code = error_code


class UnreachableError(ClusterError):
    """No broker answered at the bootstrap address (wrong address, broker down, or a firewall)."""


class TransactionError(KafkaLiteError):
    """A transactional request the coordinator refused, or a transaction it aborted; `error_code` is Kafka's."""

    def __init__(self, message: str, error_code: int) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.retriable = error_code == 51  # CONCURRENT_TRANSACTIONS: the previous transaction is still completing


class ClosedError(KafkaLiteError):
    """The broker, producer or consumer has been closed."""


class AuthenticationError(KafkaLiteError):
    """Credentials were refused. The message says so and nothing more: no hint about which part was wrong."""

    error_code = 58


class AuthorizationError(KafkaLiteError):
    """The authorizer refused an operation on a resource; `error_code` is Kafka's code for that resource type."""

    def __init__(self, message: str, error_code: int) -> None:
        super().__init__(message)
        self.error_code = error_code
