"""OffsetIndex and TimeIndex lookups checked against `bisect` over a sorted list (Kafka's OffsetIndexTest idea)."""

from __future__ import annotations

from bisect import bisect_right

from hypothesis import given
from hypothesis import strategies as st

from kafkalite.storage.offset_index import OffsetIndex
from kafkalite.storage.time_index import NO_TIMESTAMP, TimeIndex

BASE = 1_000_000


def build_offset_index(relative_offsets: list[int]) -> tuple[OffsetIndex, list[int], list[int]]:
    offsets = [BASE + r for r in sorted(set(relative_offsets))]
    positions = [i * 100 + 7 for i in range(len(offsets))]
    index = OffsetIndex(BASE)
    for offset, position in zip(offsets, positions, strict=True):
        index.append(index.encode_entry(offset, position))
    return index, offsets, positions


@given(
    st.lists(st.integers(min_value=0, max_value=(1 << 31) - 1), max_size=300),
    st.lists(st.integers(min_value=BASE - 10, max_value=BASE + (1 << 31) + 10), min_size=1, max_size=50),
)
def test_offset_index_lookup_matches_bisect(relative_offsets: list[int], targets: list[int]) -> None:
    index, offsets, positions = build_offset_index(relative_offsets)
    assert index.problem(log_size=positions[-1] + 1 if positions else 0) is None
    for target in [*targets, *offsets, *(o - 1 for o in offsets)]:
        slot = bisect_right(offsets, target)
        assert index.lookup(target) == (positions[slot - 1] if slot else 0)


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=100), st.integers(0, 100_000))
def test_offset_index_truncate_to_position(relative_offsets: list[int], position: int) -> None:
    index, _offsets, positions = build_offset_index(relative_offsets)
    index.truncate_to_position(position)
    kept = [p for p in positions if p < position]
    assert [index.entry(n)[1] for n in range(len(index))] == kept
    assert index.size_bytes == 8 * len(kept)


def test_offset_index_problems() -> None:
    index, _, positions = build_offset_index([1, 5, 9])
    assert index.problem(log_size=positions[-1]) is not None  # an entry at the end of the log points at nothing
    assert OffsetIndex(0, b"\x00" * 12).problem(100) is not None
    assert OffsetIndex(0, b"\x00" * 16).problem(100) is not None  # Kafka's preallocated zeros: not increasing


@given(
    st.lists(st.integers(min_value=0, max_value=1 << 40), max_size=300),
    st.lists(st.integers(min_value=-5, max_value=(1 << 40) + 5), min_size=1, max_size=50),
)
def test_time_index_lookup_matches_bisect(timestamps: list[int], targets: list[int]) -> None:
    index = TimeIndex(BASE)
    appended: list[tuple[int, int]] = []
    for n, timestamp in enumerate(timestamps):
        entry = index.encode_entry_if_newer(timestamp, BASE + n)
        if entry is not None:
            index.append(entry)
            appended.append((timestamp, BASE + n))
    keys = [timestamp for timestamp, _ in appended]
    assert keys == sorted(set(keys))  # only growing timestamps were kept
    assert index.problem() is None
    assert index.last_entry() == (appended[-1] if appended else (NO_TIMESTAMP, BASE))
    for target in [*targets, *keys]:
        slot = bisect_right(keys, target)
        assert index.lookup(target) == (appended[slot - 1][1] if slot else BASE)
