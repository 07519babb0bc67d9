"""A raw Kafka wire client over TCP or TLS, with kio classes, for byte-level security tests (SASL framings,
session expiry, connection limits)."""

from __future__ import annotations

import asyncio
import io
import ssl
import struct
import sys
from typing import Any

import scramp
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from kafkalite.protocol.messages import build

TIMEOUT_S = 10.0


class WireClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str = "t") -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self.correlation_id = 0

    @classmethod
    async def connect(cls, port: int, tls: ssl.SSLContext | None = None, client_id: str = "t") -> WireClient:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=tls, server_hostname="localhost" if tls else None),
            TIMEOUT_S,
        )
        return cls(reader, writer, client_id)

    def encode(self, api_key: int, version: int, **fields: Any) -> bytes:
        request_type = load_request_schema(api_key, version)
        self.correlation_id += 1
        header_cls = request_type.__header_schema__
        buffer = io.BytesIO()
        header = header_cls(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self.correlation_id,
            client_id=self.client_id,
        )
        entity_writer(header_cls)(buffer, header)
        entity_writer(request_type)(buffer, build(request_type, fields))
        body = buffer.getvalue()
        return struct.pack(">i", len(body)) + body

    @staticmethod
    def nested(api_key: int, version: int, class_name: str, **fields: Any) -> Any:
        """A request-side kio class of this version, by name."""
        return build(getattr(sys.modules[load_request_schema(api_key, version).__module__], class_name), fields)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self) -> bytes:
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), TIMEOUT_S))[0]
        return await asyncio.wait_for(self.reader.readexactly(size), TIMEOUT_S)

    async def request(self, api_key: int, version: int, **fields: Any) -> Any:
        await self.send_raw(self.encode(api_key, version, **fields))
        frame = await self.read_frame()
        response_type = load_response_schema(api_key, version)
        offset = 4 + response_type.__header_schema__.__version__
        response, _ = entity_reader(response_type)(frame, offset)
        return response

    async def token(self, token: bytes) -> bytes:
        """One SASL token in the legacy framing (after SaslHandshake v0): raw in, raw out."""
        await self.send_raw(struct.pack(">i", len(token)) + token)
        return await self.read_frame()

    async def is_closed_by_server(self) -> bool:
        try:
            return await asyncio.wait_for(self.reader.read(1), TIMEOUT_S) == b""
        except (ConnectionError, ssl.SSLError):
            return True

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, ssl.SSLError):
            pass

    async def metadata(self) -> Any:
        return await self.request(
            3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )

    async def scram_login(self, user: str, password: str, mechanism: str = "SCRAM-SHA-512", version: int = 2) -> Any:
        """SaslHandshake v1 + SaslAuthenticate exchange; the last SaslAuthenticate response."""
        handshake = await self.request(17, 1, mechanism=mechanism)
        assert handshake.error_code == 0, handshake
        client = scramp.ScramClient([mechanism], user, password)
        first = await self.request(36, version, auth_bytes=client.get_client_first().encode())
        if first.error_code:
            return first
        client.set_server_first(first.auth_bytes.decode())
        final = await self.request(36, version, auth_bytes=client.get_client_final().encode())
        if not final.error_code:
            client.set_server_final(final.auth_bytes.decode())
        return final
