"""Partition logs: the file engine in Kafka's segment format, and its in-memory twin (see `base.Log`)."""

from kafkalite.storage.atomic_file import read_file, write_atomically
from kafkalite.storage.base import Log, LogConfig
from kafkalite.storage.memory_log import MemoryLog
from kafkalite.storage.partition_log import PartitionLog

__all__ = ["Log", "LogConfig", "MemoryLog", "PartitionLog", "read_file", "write_atomically"]
