"""ListOffsets by timestamp through each client: the first offset whose timestamp is >= the target, or none."""

from __future__ import annotations

import time

import pytest

from .clients import CLIENTS, Client, messages
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize("client_type", CLIENTS)
def test_offsets_for_times(served: ServedBroker, client_type: type[Client]) -> None:
    client = client_type(served.bootstrap)
    topic = f"ts-{client.name}"
    client.produce(topic, messages("early", 5), partition=0)
    time.sleep(0.05)
    boundary = now_ms()
    time.sleep(0.05)
    client.produce(topic, messages("late", 5), partition=0)

    assert client.offset_for_time(topic, 0, 0) == 0
    assert client.offset_for_time(topic, 0, boundary) == 5
    assert client.offset_for_time(topic, 0, now_ms() + 3_600_000) is None
