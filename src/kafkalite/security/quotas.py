"""Client quotas: stored per entity, resolved as Kafka resolves them, enforced as byte rates with KIP-219 throttling.

Entities are Kafka's: `user` and `client-id` (each a name, or null for the default of that type), alone or together,
and `ip` (stored and described; only connection-rate keys apply to it, which KafkaLite does not enforce). Keys:
`producer_byte_rate` and `consumer_byte_rate` (bytes per second), `request_percentage` (share of one thread's time,
in percent: KafkaLite serves every request on one event loop, so it is the share of the loop's time the client's
requests took, measured around each handler), `controller_mutation_rate` (partitions created or deleted per
second, KIP-599), all enforced; `connection_creation_rate` (stored and described, not enforced).

Resolution, most specific first (Kafka's order): user+client-id, user+default client-id, user, default user+client-id,
default user+default client-id, default user, client-id, default client-id. Every connection whose (user, client-id)
resolves to the same entity shares that entity's rate, as in Kafka.

Enforcement: `record(entity key, amount, now)` adds bytes (or, for `request_percentage`, handler seconds x 100) to a
window of `SAMPLES` one-second samples; when the rate
over the window exceeds the quota, the throttle time is Kafka's `(observed - quota) / quota * window` in ms. The
server answers at once with that `throttle_time_ms` and then stops reading from the connection for as long
(KIP-219). Time is passed in; nothing here sleeps.

Controller mutations are a token bucket per entity, as KIP-599 defines them: it holds at most `quota x SAMPLES x
SAMPLE_S` tokens, refills at `quota` per second, and each partition created or deleted takes one. A request is let
through while the bucket is not below zero (even if it takes it below), and refused with THROTTLING_QUOTA_EXCEEDED
while it is; the throttle time is how long the bucket needs to climb back to zero.

File: `<data_dir>/_kafkalite/security/quotas.json`, `{"version": 1, "quotas": [[[[type, name|null], ...],
{key: value}], ...]}`, replaced atomically on each change; memory-only without a data directory.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kafkalite.security import documents

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"
ENTITY_TYPES: Final = (USER, CLIENT_ID, IP)
# Not `Final`: the compiled `server.dispatch` reads these three, and mypyc copies a `Final` literal of an interpreted
# module into its build, where an edit here would not reach (`protocol.native`).
PRODUCE_RATE = "producer_byte_rate"
FETCH_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
MUTATION_RATE: Final = "controller_mutation_rate"
CLIENT_KEYS: Final = (PRODUCE_RATE, FETCH_RATE, REQUEST_PERCENTAGE, MUTATION_RATE)
IP_KEYS: Final = ("connection_creation_rate",)
SAMPLES: Final = 11  # quota.window.num
SAMPLE_S: Final = 1.0  # quota.window.size.seconds
MAX_THROTTLE_MS: Final = 30_000

Entity = tuple[tuple[str, str | None], ...]
"""Sorted (entity type, name or None for the default) pairs."""


def entity(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """Sorted by type alone: a name may be None, and a type named twice is `check_change`'s to refuse."""
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


class InvalidQuotaError(ValueError):
    """An entity or key Kafka refuses (INVALID_REQUEST); the message says which."""


def check_change(target: Entity, key: str, value: float | None) -> None:
    types = [t for t, _ in target]
    if not target or len(set(types)) != len(types) or any(t not in ENTITY_TYPES for t in types):
        raise InvalidQuotaError(f"invalid quota entity {list(target)}")
    if IP in types and len(types) > 1:
        raise InvalidQuotaError("an ip quota entity cannot be combined with user or client-id")
    allowed = IP_KEYS if IP in types else CLIENT_KEYS
    if key not in allowed:
        raise InvalidQuotaError(f"{key} is not a quota key for this entity (one of {', '.join(allowed)})")
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise InvalidQuotaError(f"{key} must be a positive number, got {value}")


@dataclass(slots=True)
class _Window:
    samples: deque[tuple[int, float]]  # (sample index, bytes)


class QuotaStore:
    """Quota values per entity, their resolution, and the byte-rate windows they are enforced with."""

    def __init__(self, data_dir: Path | None, *, fsync: bool = True) -> None:
        self.path = documents.document_path(data_dir, "quotas.json")
        self._fsync = fsync
        self._quotas: dict[Entity, dict[str, float]] = {}
        self._windows: dict[tuple[str, Entity], _Window] = {}
        self._buckets: dict[Entity, list[float]] = {}  # controller mutations: [tokens, loop time of the last update]
        self.enforced = False  # any byte-rate quota exists (the server skips all accounting otherwise)
        self.request_time_enforced = False  # any request_percentage quota exists
        self.mutations_enforced = False  # any controller_mutation_rate quota exists
        self._load()

    def _load(self) -> None:
        def parse(rows: Any) -> dict[Entity, dict[str, float]]:
            return {
                entity((t, n) for t, n in pairs): {k: float(v) for k, v in values.items()} for pairs, values in rows
            }

        self._set_quotas(documents.load(self.path, "quotas", parse, "quota") or {})

    def _set_quotas(self, quotas: dict[Entity, dict[str, float]]) -> None:
        self._quotas = quotas
        self._windows.clear()
        self._buckets.clear()
        self.enforced = any(PRODUCE_RATE in v or FETCH_RATE in v for v in quotas.values())
        self.request_time_enforced = any(REQUEST_PERCENTAGE in v for v in quotas.values())
        self.mutations_enforced = any(MUTATION_RATE in v for v in quotas.values())

    def items(self) -> list[tuple[Entity, dict[str, float]]]:
        return [(e, dict(v)) for e, v in self._quotas.items()]

    def alter(self, changes: Iterable[tuple[Entity, str, float | None]], *, validate_only: bool = False) -> None:
        """Set (value) or remove (None) each key; all are checked first, then written at once."""
        changes = list(changes)
        for target, key, value in changes:
            check_change(target, key, value)
        if validate_only:
            return
        quotas = {e: dict(v) for e, v in self._quotas.items()}
        for target, key, value in changes:
            values = quotas.setdefault(target, {})
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
            if not values:
                del quotas[target]
        documents.save(self.path, "quotas", [[[list(p) for p in e], v] for e, v in quotas.items()], fsync=self._fsync)
        self._set_quotas(quotas)

    def resolve(self, user: str, client_id: str, key: str) -> tuple[Entity, float] | None:
        """The entity whose `key` quota applies to (user, client-id), and the quota; None when none applies."""
        candidates: tuple[Entity, ...] = (
            entity([(USER, user), (CLIENT_ID, client_id)]),
            entity([(USER, user), (CLIENT_ID, None)]),
            entity([(USER, user)]),
            entity([(USER, None), (CLIENT_ID, client_id)]),
            entity([(USER, None), (CLIENT_ID, None)]),
            entity([(USER, None)]),
            entity([(CLIENT_ID, client_id)]),
            entity([(CLIENT_ID, None)]),
        )
        for candidate in candidates:
            value = self._quotas.get(candidate, {}).get(key)
            if value is not None:
                return candidate, value
        return None

    def record(self, user: str, client_id: str, key: str, size: float, now: float) -> int:
        """Count `size` bytes against the applicable `key` quota at time `now`; the throttle time in ms (0: none)."""
        resolved = self.resolve(user, client_id, key)
        if resolved is None:
            return 0
        target, quota = resolved
        window = self._windows.setdefault((key, target), _Window(deque()))
        index = int(now // SAMPLE_S)
        samples = window.samples
        while samples and samples[0][0] <= index - SAMPLES:
            samples.popleft()
        if samples and samples[-1][0] == index:
            samples[-1] = (index, samples[-1][1] + size)
        else:
            samples.append((index, float(size)))
        # The window spans from its oldest sample to now (at least one sample), as Kafka's rate does.
        elapsed = max(now - samples[0][0] * SAMPLE_S, SAMPLE_S)
        observed = sum(b for _, b in samples) / elapsed
        if observed <= quota:
            return 0
        return min(MAX_THROTTLE_MS, int((observed - quota) / quota * elapsed * 1000))

    def mutation_bucket(self, user: str, client_id: str, now: float) -> MutationBucket | None:
        """The bucket (refilled up to `now`) that the controller_mutation_rate quota of (user, client-id) draws
        from; None when no such quota applies."""
        resolved = self.resolve(user, client_id, MUTATION_RATE)
        if resolved is None:
            return None
        target, quota = resolved
        burst = quota * SAMPLES * SAMPLE_S
        state = self._buckets.setdefault(target, [burst, now])
        state[0] = min(burst, state[0] + (now - state[1]) * quota)
        state[1] = now
        return MutationBucket(state, quota)


class MutationBucket:
    """The controller-mutation token bucket of the entity one request resolves to (see the module docstring)."""

    __slots__ = ("_state", "quota")

    def __init__(self, state: list[float], quota: float) -> None:
        self._state = state
        self.quota = quota

    def throttle_ms(self) -> int:
        """0 while the bucket is not below zero; else how long until it is back at zero."""
        tokens = self._state[0]
        return 0 if tokens >= 0 else min(MAX_THROTTLE_MS, math.ceil(-tokens / self.quota * 1000))

    def take(self, mutations: int) -> None:
        self._state[0] -= mutations


def describe(
    quotas: Iterable[tuple[Entity, Mapping[str, float]]],
    components: Iterable[tuple[str, int, str | None]],
    *,
    strict: bool,
) -> list[tuple[Entity, dict[str, float]]]:
    """DescribeClientQuotas' filter: components (entity type, match type 0 exact / 1 default / 2 any, name)."""
    wanted = list(components)
    result = []
    for target, values in quotas:
        named = dict(target)
        if strict and set(named) != {t for t, _, _ in wanted}:
            continue
        if all(_component_matches(named, c) for c in wanted):
            result.append((target, dict(values)))
    return result


def _component_matches(named: Mapping[str, str | None], component: tuple[str, int, str | None]) -> bool:
    entity_type, match_type, match = component
    if entity_type not in named:
        return False
    if match_type == 0:
        return named[entity_type] == match and match is not None
    if match_type == 1:
        return named[entity_type] is None
    return True
