"""`OffsetMap`: runs of copied offsets and the translation of committed offsets, checked against a plain dict."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.migrate.offset_map import OffsetMap


def test_gap_free_source_is_one_run() -> None:
    mapping = OffsetMap(next_source=0, next_target=0)
    for offset in range(1000):
        mapping.record(offset, offset)
    assert mapping.runs == [[0, 0, 1000]]
    assert (mapping.next_source, mapping.next_target, mapping.copied) == (1000, 1000, 1000)
    assert [mapping.translate(o) for o in (0, 1, 999, 1000, 5000)] == [0, 1, 999, 1000, 1000]


def test_gaps_and_an_offset_target() -> None:
    mapping = OffsetMap(next_source=10, next_target=100)
    for source, target in ((10, 100), (11, 101), (15, 102), (16, 103), (30, 104)):
        mapping.record(source, target)
    assert mapping.runs == [[10, 100, 2], [15, 102, 2], [30, 104, 1]]
    # before the first copied record, inside runs, inside gaps, after the end
    expected = {0: 100, 10: 100, 11: 101, 12: 102, 14: 102, 15: 102, 16: 103, 17: 104, 29: 104, 30: 104, 31: 105}
    assert {o: mapping.translate(o) for o in expected} == expected


def test_round_trips_through_json() -> None:
    mapping = OffsetMap(next_source=0, next_target=7)
    for source, target in ((0, 7), (2, 8), (3, 9)):
        mapping.record(source, target)
    assert OffsetMap.from_json(mapping.to_json()) == mapping


@given(st.lists(st.integers(min_value=1, max_value=5), min_size=0, max_size=200), st.integers(0, 1000))
def test_translation_matches_a_plain_dict(steps: list[int], target_start: int) -> None:
    """Source offsets with random gaps copied to consecutive target offsets: every committed offset C maps to the
    target offset of the first copied record at or after C, or past the last one."""
    mapping = OffsetMap(next_source=0, next_target=target_start)
    copied: dict[int, int] = {}
    source = 0
    for index, step in enumerate(steps):
        source += step
        copied[source] = target_start + index
        mapping.record(source, target_start + index)
    end = target_start + len(steps)
    for committed in range(source + 3):
        following = [copied[o] for o in sorted(copied) if o >= committed]
        assert mapping.translate(committed) == (following[0] if following else end)


@pytest.mark.parametrize("runs", [[[0, 0, 3], [5, 3, 1]]])
def test_runs_are_the_saved_form(runs: list[list[int]]) -> None:
    saved = OffsetMap.from_json({"next_source": 6, "next_target": 4, "runs": runs})
    assert saved.translate(4) == 3
    assert saved.translate(6) == 4
