"""The Kafka wire-protocol server: asyncio TCP in front of a `Broker`, one handler module per API key."""

from kafkalite.server.inprocess import ThreadedServer, run_in_thread, serve
from kafkalite.server.server import KafkaServer

__all__ = ["KafkaServer", "ThreadedServer", "run_in_thread", "serve"]
