"""Fixtures of the broker suite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .harness import BrokerFactory


@pytest.fixture
async def files(tmp_path: Path) -> AsyncIterator[BrokerFactory]:
    """File-engine brokers over one data directory: each call opens one, so a second call is a restart."""
    factory = BrokerFactory("file", tmp_path)
    yield factory
    await factory.close_all()
