"""The fuzzer on secured listeners at a modest size (`bench.fuzz.secured`): mutated requests of every advertised API
before authentication, hostile SASL handshakes and tokens in both framings, TLS garbage; SCRAM and TLS probers
answered throughout, no traceback, bounded memory. The long run is `python -m bench.fuzz --secured`."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.fuzz.__main__ import advertised_pairs
from bench.fuzz.secured import fuzz_secured, served_secured_broker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]

MAX_GROWTH_MIB = 64


def test_hostile_input_on_sasl_and_tls_listeners(tmp_path: Path) -> None:
    with served_secured_broker(tmp_path / "broker.log") as target:
        figures = fuzz_secured(target, advertised_pairs(), frames=400, seed=5)
        assert target.alive()
    assert figures["findings"] == [], figures["findings"]
    assert figures["closed"], "some input was refused by closing the connection"
    assert figures["answered"], "some SASL steps were answered"
    assert figures["probes"], "the probers ran"
    growth = float(figures["rss_after_mib"]) - float(figures["rss_before_mib"])  # type: ignore[arg-type]
    assert growth < MAX_GROWTH_MIB, f"memory grew {growth:.1f} MiB"
