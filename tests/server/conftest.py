"""Fixtures: a real in-memory broker served on a random port, and a minimal raw Kafka client for byte-level tests."""

from __future__ import annotations

import asyncio
import io
import struct
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from groups_wire import SETTINGS
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from kafkalite.broker import Broker
from kafkalite.protocol.messages import build
from kafkalite.server import KafkaServer, ThreadedServer, run_in_thread, serve

TIMEOUT_S = 10.0


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker(data_dir=None) as b:
        yield b


@pytest.fixture
async def server(broker: Broker) -> AsyncIterator[KafkaServer]:
    async with serve(broker, "127.0.0.1", 0, max_frame_bytes=1024 * 1024) as s:
        yield s


class RawClient:
    """Speaks the wire protocol with kio classes, one request at a time; for tests that need exact bytes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.correlation_id = 0

    @classmethod
    async def connect(cls, server: KafkaServer) -> RawClient:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", server.port), TIMEOUT_S)
        return cls(reader, writer)

    def encode(self, api_key: int, version: int, **fields: Any) -> bytes:
        request_type = load_request_schema(api_key, version)
        self.correlation_id += 1
        header_cls = request_type.__header_schema__
        buffer = io.BytesIO()
        entity_writer(header_cls)(
            buffer,
            header_cls(
                request_api_key=api_key, request_api_version=version, correlation_id=self.correlation_id, client_id="t"
            ),
        )
        entity_writer(request_type)(buffer, build(request_type, fields))
        body = buffer.getvalue()
        return struct.pack(">i", len(body)) + body

    @staticmethod
    def nested(api_key: int, version: int, class_name: str, **fields: Any) -> Any:
        """A request-side kio class of this version by name, keeping only the fields the version has.

        None when the version has no such class (the field holding it is then dropped too).
        """
        module = sys.modules[load_request_schema(api_key, version).__module__]
        cls = getattr(module, class_name, None)
        return None if cls is None else build(cls, fields)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self) -> bytes:
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), TIMEOUT_S))[0]
        return await asyncio.wait_for(self.reader.readexactly(size), TIMEOUT_S)

    async def request(self, api_key: int, version: int, **fields: Any) -> Any:
        await self.send_raw(self.encode(api_key, version, **fields))
        return self.decode_response(api_key, version, await self.read_frame())

    def decode_response(self, api_key: int, version: int, frame: bytes) -> Any:
        response_type = load_response_schema(api_key, version)
        (correlation_id,) = struct.unpack_from(">i", frame)
        assert correlation_id == self.correlation_id
        offset = 4 + response_type.__header_schema__.__version__  # header v1: one byte of empty tagged fields
        response, size = entity_reader(response_type)(frame, offset)
        assert offset + size == len(frame), "every byte of the response is consumed"
        return response

    async def is_closed_by_server(self) -> bool:
        """True when the server closed the connection (EOF within the timeout)."""
        try:
            return await asyncio.wait_for(self.reader.read(1), TIMEOUT_S) == b""
        except ConnectionError:
            return True

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


Connect = Callable[[], Awaitable[RawClient]]


@pytest.fixture
async def connect(server: KafkaServer) -> AsyncIterator[Connect]:
    """A factory of raw connections to the server, all closed at teardown."""
    clients: list[RawClient] = []

    async def open_client() -> RawClient:
        clients.append(await RawClient.connect(server))
        return clients[-1]

    yield open_client
    for client in clients:
        await client.close()


@pytest.fixture
async def raw(connect: Connect) -> RawClient:
    return await connect()


@pytest.fixture
def threaded() -> Iterator[ThreadedServer]:
    """An in-memory broker served from a background thread, for synchronous clients (and groups that rebalance fast)."""
    with run_in_thread(data_dir=None, **SETTINGS) as s:
        yield s
