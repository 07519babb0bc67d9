"""Fixtures: a test PKI per module and a broker served with every kind of listener (`secured_broker`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from certs import Pki, make_pki
from secured_broker import Secured, secured_broker


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def secured(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    with secured_broker(pki, tmp_path_factory.mktemp("data")) as broker:
        yield broker
