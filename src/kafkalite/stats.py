"""Plain counters for `/metrics`: updated where the work happens, read by the HTTP layer at scrape time.

Invariants that keep the hot path cheap:
- counters are plain attributes and dicts bumped once per request, per batch or per fsync round, never per record;
- nothing here knows Prometheus: `kafkalite.http.metrics` turns these numbers into metric families when scraped;
- a `Histogram` is a fixed list of bucket counts (one `bisect` per observation), cumulative only when exported.

Concurrency: everything is touched from the broker's event loop only (fsync rounds record their outcome back on the
loop, after the worker thread returns), so no locks. Totals only grow, so a scrape that races an update reads a value
that is at most one step behind.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Sequence

LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
BATCH_SIZE_BUCKETS: tuple[float, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Histogram:
    """Observation counts per bucket (`bounds` are upper bounds, inclusive, as Prometheus's `le`), plus sum and
    count. `counts` has one more slot than `bounds`: the observations above the last bound (+Inf)."""

    __slots__ = ("bounds", "count", "counts", "total")

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS_S) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, cumulative count) pairs ending with "+Inf", as the exposition format wants them."""
        running = 0
        out: list[tuple[str, int]] = []
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return out


class ApiStats:
    """One Kafka API's requests: how many, how long (decode to encoded answer), and error codes seen in answers."""

    __slots__ = ("errors", "latency", "name", "requests")

    def __init__(self, name: str) -> None:
        self.name = name  # Kafka's request name, as in kafka.network:type=RequestMetrics,request=<name>
        self.requests = 0
        self.latency = Histogram()
        self.errors: dict[int, int] = {}  # Kafka error code -> count of answer fields carrying it


class RequestStats:
    """Per-API request counters and the connection gauge of the wire server."""

    __slots__ = ("apis", "connections_closed", "connections_open", "connections_total")

    def __init__(self) -> None:
        self.apis: dict[int, ApiStats] = {}  # api key -> its stats; created on an API's first request
        self.connections_open = 0
        self.connections_total = 0
        self.connections_closed = 0

    def api(self, api_key: int, name: str) -> ApiStats:
        stats = self.apis.get(api_key)
        if stats is None:
            stats = self.apis[api_key] = ApiStats(name)
        return stats


class SyncStats:
    """Group-commit fsync rounds of every partition log: duration and how many appends each round made durable."""

    __slots__ = ("_failures_lock", "appends", "batch_size", "failures", "latency", "rounds")

    def __init__(self) -> None:
        self.rounds = 0
        self.failures = 0
        self.appends = 0
        self.latency = Histogram()
        self.batch_size = Histogram(BATCH_SIZE_BUCKETS)
        self._failures_lock = threading.Lock()

    def count_failure(self) -> None:
        """One failed fsync: called from the fsync threads of every log, so the count keeps a lock of its own."""
        with self._failures_lock:
            self.failures += 1

    def record(self, seconds: float, appends: int) -> None:
        self.rounds += 1
        self.appends += appends
        self.latency.observe(seconds)
        self.batch_size.observe(appends)


class RetentionStats:
    """Retention passes and what they deleted."""

    __slots__ = ("failures", "passes", "segments_deleted")

    def __init__(self) -> None:
        self.passes = 0
        self.failures = 0
        self.segments_deleted = 0


class ProducerExpirationStats:
    """Partition entries forgotten by `producer.id.expiration.ms`, and checks that failed."""

    __slots__ = ("expired", "failures")

    def __init__(self) -> None:
        self.failures = 0
        self.expired = 0


class BrokerStats:
    """Everything the broker and the wire server count, in one place the HTTP layer reads."""

    __slots__ = ("producer_expiration", "requests", "retention", "started_at", "sync")

    def __init__(self) -> None:
        self.started_at = time.time()
        self.requests = RequestStats()
        self.sync = SyncStats()
        self.retention = RetentionStats()
        self.producer_expiration = ProducerExpirationStats()
