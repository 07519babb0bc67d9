"""Malformed lengths that used to abort the broker (kio's native reader allocating by them) close one connection only.

The guard runs before the native reader, so the in-process server survives; were it to regress, the test process
itself would die, which fails the run just as loudly.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

import pytest

from kafkalite.server.server import REFUSAL_WARNINGS_PER_MINUTE

pytestmark = pytest.mark.timeout(30)


def frame(api_key: int, version: int, body_hex: str) -> bytes:
    # header v2: api_key, version, correlation_id, client_id "t", no tagged fields
    payload = struct.pack(">hhih", api_key, version, 7, 1) + b"t" + b"\x00" + bytes.fromhex(body_hex)
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize(("api_key", "version", "body"), [(3, 12, "ffffffff0f"), (19, 7, "e2feacdb58")])
async def test_huge_count_closes_only_that_connection(
    connect: Any, api_key: int, version: int, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    bystander = await connect()
    assert (await bystander.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0
    offender = await connect()
    with caplog.at_level(logging.WARNING):
        await offender.send_raw(frame(api_key, version, body))
        assert await offender.is_closed_by_server()
    assert any("Closing connection" in r.getMessage() and "array of" in r.getMessage() for r in caplog.records)
    # the connection already open and a new one are both still answered
    assert (
        await bystander.request(
            3, 12, topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )
    ).throttle_time is not None
    fresh = await connect()
    assert (await fresh.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0


async def test_a_flood_of_bad_frames_writes_a_bounded_number_of_log_lines(
    connect: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkalite.server"):
        for _ in range(REFUSAL_WARNINGS_PER_MINUTE + 40):
            offender = await connect()
            await offender.send_raw(struct.pack(">ihhi", 8, 9999, 0, 1))  # an API key that does not exist
            assert await offender.is_closed_by_server()
    closing = [r for r in caplog.records if r.getMessage().startswith("Closing connection from")]
    assert len(closing) == REFUSAL_WARNINGS_PER_MINUTE  # the rest are counted, and the count goes out with the next
    bystander = await connect()
    assert (await bystander.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0
