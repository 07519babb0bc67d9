"""The named tuples the request path builds with `tuple.__new__` (their own `__new__` is interpreted even where the
module is compiled) come out exactly as their constructors would make them: same class, every field in place."""

from __future__ import annotations

import time

from kafkalite.broker import Broker, FetchData
from kafkalite.broker.partition import ProduceResult, _fetch_data, _produce_result
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.records import BatchHeader, RecordToWrite, build_batch, read_header, unpack_header
from kafkalite.protocol.wire import ApiKey, RequestHeader, _new_header
from kafkalite.server.dispatch import RequestContext, ServerInfo, _context
from kafkalite.storage.segment import _Found, _found, _index_plan, _IndexPlan
from kafkalite.storage.transaction_index import AbortedTxn


def test_request_header() -> None:
    built = _new_header(0, 9, 42, "client")
    assert type(built) is RequestHeader
    assert built == RequestHeader(0, 9, 42, "client")
    assert built.client_id == "client"


def test_request_context() -> None:
    broker = Broker(data_dir=None)  # not started: only its identity matters here
    header = RequestHeader(0, 9, 42, "client")
    server = ServerInfo(1, "localhost", 9092)
    schema = api_schema(ApiKey.PRODUCE, 9)
    built = _context(broker, server, header, schema, "10.0.0.1", None, None)
    assert type(built) is RequestContext
    assert built == RequestContext(broker, server, header, schema, "10.0.0.1", None, None)
    assert (built.schema, built.client_host, built.security) == (schema, "10.0.0.1", None)


def test_batch_header_has_a_field_for_every_value_of_the_layout() -> None:
    batch = build_batch([RecordToWrite(b"v")], now_ms=int(time.time() * 1000), producer_id=7, base_sequence=3)
    built = unpack_header(batch)
    assert type(built) is BatchHeader
    assert len(built) == len(BatchHeader._fields)
    assert built == read_header(batch) == BatchHeader._make(built)
    assert (built.producer_id, built.base_sequence, built.record_count) == (7, 3, 1)


def test_produce_result() -> None:
    built = _produce_result(5, 9, -1, 0)
    assert type(built) is ProduceResult
    assert built == ProduceResult(5, 9, -1, 0)
    assert built.log_start_offset == 0


def test_fetch_data() -> None:
    aborted = [AbortedTxn(7, 3, 9, 3)]
    built = _fetch_data(b"records", 10, 2, 8, aborted)
    assert type(built) is FetchData
    assert built == FetchData(b"records", 10, 2, 8, aborted)
    assert (built.records, built.last_stable_offset, built.aborted_transactions) == (b"records", 8, aborted)
    assert _fetch_data(b"", 10, 2, 10, None) == FetchData(b"", 10, 2, 10)  # the default: no aborted list


def test_a_segment_scans_found_batch_and_its_index_plan() -> None:
    batch = build_batch([RecordToWrite(b"v")], now_ms=int(time.time() * 1000))
    header = read_header(batch)
    found = _found(61, header, batch, 61)
    assert type(found) is _Found
    assert found == _Found(61, header, batch, 61)
    assert (found.position, found.header, found.chunk_at) == (61, header, 61)
    plan = _index_plan(b"o", None, 5, 4)
    assert type(plan) is _IndexPlan
    assert plan == _IndexPlan(b"o", None, 5, 4)
    assert (plan.time_entry, plan.offset_of_max_timestamp) == (None, 4)
