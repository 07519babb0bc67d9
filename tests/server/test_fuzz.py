"""The structure-aware fuzzer at a modest size, against a real `kafkalite serve` process.

Every (api_key, version) the broker advertises gets valid and mutated frames (`bench.fuzz.frames`): nulls, boundary
integers, huge counts, long strings and arrays, truncations, bit flips. The broker must answer every frame it
answers with a frame that decodes, stay responsive to a second connection throughout, keep every acknowledged record,
log no traceback, and not grow its memory without bound. The long run (a million frames) is
`python -m bench.fuzz`; its figures are in docs/operations/hostile-input.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.fuzz.__main__ import advertised_pairs, fuzz
from bench.fuzz.target import served_broker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]

MAX_GROWTH_MIB = 64


@pytest.mark.parametrize("seed", [11, 12])
def test_mutated_frames_of_every_api_leave_the_broker_serving(tmp_path: Path, seed: int) -> None:
    frames = 4 * len(advertised_pairs())  # every advertised (api_key, version) four times, in shuffled rounds
    with served_broker(tmp_path / "broker.log") as target:
        figures = fuzz(target, frames, seed, quiet=True, probe_bound_s=10.0)
        assert target.alive()
    assert figures["findings"] == [], f"seed {seed}: {figures['findings']}"
    assert figures["frames"] == frames
    assert figures["answered"], "some frames were answered"
    assert figures["closed"], "some frames were refused by closing the connection"
    assert figures["canary_acked"], "the canary produced"
    assert figures["probes"], "the prober ran"
    assert figures["created"], "the run counted what the frames created, and deleted it"
    growth = float(figures["rss_after_cleanup_mib"]) - float(figures["rss_before_mib"])  # type: ignore[arg-type]
    assert growth < MAX_GROWTH_MIB, f"memory grew {growth:.1f} MiB beyond the state the frames created"
