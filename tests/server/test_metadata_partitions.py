"""Metadata's partition entries: built once per (version, node) up to the largest topic served, and shared.

An all-topics Metadata answer lists every partition; building one kio entity per partition per request cost the
broker most of its time under a fuzzer that grew a topic to 5,000 partitions. The entries depend only on the
version, the node and the partition index, so one growing tuple per (version, node) serves every topic: a topic of
N partitions gets its first N. What stays in memory after a big topic is deleted is one entry per partition index
and version, never one per topic size asked for. (Every version's whole answer, over the wire:
tests/server/test_versions.py.)
"""

from __future__ import annotations

from typing import cast

import pytest

from kafkalite.broker import Broker
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.wire import ApiKey, RequestHeader
from kafkalite.server.dispatch import RequestContext, ServerInfo
from kafkalite.server.handlers import metadata


def _context(version: int, node: int = 0) -> RequestContext:
    header = RequestHeader(ApiKey.METADATA, version, 1, "test")
    return RequestContext(cast(Broker, None), ServerInfo(node, "h", 1), header, api_schema(ApiKey.METADATA, version))


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    metadata._partition_entries.clear()


@pytest.mark.parametrize("version", range(14))
def test_entries_name_each_partition_led_by_the_node(version: int) -> None:
    entries = metadata._partitions(_context(version, node=3), 5)
    assert [entry.partition_index for entry in entries] == [0, 1, 2, 3, 4]
    assert {(entry.leader_id, tuple(entry.replica_nodes), tuple(entry.isr_nodes)) for entry in entries} == {
        (3, (3,), (3,))
    }


def test_every_topic_size_shares_one_list_of_entries() -> None:
    ctx = _context(12)
    big = metadata._partitions(ctx, 1000)
    sizes = [metadata._partitions(ctx, count) for count in range(1, 1001)]
    assert all(len(entries) == count for count, entries in enumerate(sizes, 1))
    assert all(entries[i] is big[i] for entries in sizes for i in range(len(entries)))
    assert list(metadata._partition_entries) == [(12, 0)]
    assert len(metadata._partition_entries[(12, 0)]) == 1000


def test_a_bigger_topic_extends_the_entries_it_finds() -> None:
    ctx = _context(9)
    small = metadata._partitions(ctx, 10)
    big = metadata._partitions(ctx, 20)
    assert big[:10] == small
    assert all(a is b for a, b in zip(big, small, strict=False))
    assert [entry.partition_index for entry in big] == list(range(20))


def test_versions_and_nodes_keep_their_own_entries() -> None:
    metadata._partitions(_context(1, node=0), 4)
    metadata._partitions(_context(1, node=1), 4)
    metadata._partitions(_context(13, node=0), 4)
    assert sorted(metadata._partition_entries) == [(1, 0), (1, 1), (13, 0)]
    assert metadata._partitions(_context(1, node=1), 4)[0].leader_id == 1
