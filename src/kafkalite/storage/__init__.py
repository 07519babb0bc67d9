"""Partition logs: the file engine in Kafka's segment format, and its in-memory twin (see `base.Log`)."""

from kafkalite.storage.atomic_file import read_file, write_atomically
from kafkalite.storage.base import Log, LogConfig
from kafkalite.storage.directory_lock import DirectoryLock
from kafkalite.storage.file_records import FileRecords
from kafkalite.storage.memory_log import MemoryLog
from kafkalite.storage.partition_log import PartitionLog
from kafkalite.storage.transaction_index import AbortedTxn, TransactionIndex

__all__ = [
    "AbortedTxn",
    "DirectoryLock",
    "FileRecords",
    "Log",
    "LogConfig",
    "MemoryLog",
    "PartitionLog",
    "TransactionIndex",
    "read_file",
    "write_atomically",
]
