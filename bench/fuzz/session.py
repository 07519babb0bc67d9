"""One fuzzing session against a running broker: mutated frames on a few connections, a prober, a canary.

- **Attackers** (`connections` at once) each send one mutated frame at a time and wait up to `answer_timeout_s` for
  its answer. An answer must be one whole frame carrying the request's correlation id that kio decodes, every byte
  consumed, as the response of that (api_key, version) (an ApiVersions request of an unserved version: as v0). A
  closed connection is a fine answer to a bad frame; no answer in time (a frame that claims more bytes than it
  sends, a long poll the frame asked for) closes the connection from our side.
- **The prober** opens a fresh connection every `probe_interval_s` and asks ApiVersions: the broker must answer
  within `probe_bound_s`, whatever the attackers do (a handler that spins the event loop fails this).
- **The canary** produces numbered records with acks=all to a topic no mutated frame can name, before, during and
  after; at the end every acknowledged one must be readable.

Findings are strings; the caller adds the broker log's tracebacks and its memory growth.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import struct
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader

from bench.fuzz.frames import Frame, encode_request, mutated_frame, request_class
from kafkalite.protocol.messages import build
from kafkalite.protocol.records import RecordToWrite, build_batch, iter_records, read_batches

API_VERSIONS = 18
PRODUCE, FETCH = 0, 1
CANARY_TIMEOUT_S = 30.0


@dataclass
class Tally:
    frames: int = 0
    answered: int = 0
    closed: int = 0
    unanswered: int = 0
    probes: int = 0
    slowest_probe_s: float = 0.0
    canary_acked: int = 0
    findings: list[str] = field(default_factory=list)
    mutations: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "answered": self.answered,
            "closed": self.closed,
            "unanswered": self.unanswered,
            "probes": self.probes,
            "slowest_probe_s": round(self.slowest_probe_s, 4),
            "canary_acked": self.canary_acked,
            "findings": self.findings,
        }


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, host: str, port: int) -> _Connection:
        return cls(*await asyncio.open_connection(host, port))

    async def call(self, data: bytes, timeout_s: float) -> bytes:
        """Send `data`; the next answer frame (without its size). EOFError when the server closed the connection."""
        self.writer.write(data)
        await self.writer.drain()
        async with asyncio.timeout(timeout_s):
            try:
                (size,) = struct.unpack(">i", await self.reader.readexactly(4))
                return await self.reader.readexactly(size)
            except asyncio.IncompleteReadError as e:
                raise EOFError from e

    def close(self) -> None:
        self.writer.close()


def decode_answer(frame: Frame, answer: bytes) -> str | None:
    """None when `answer` is a valid response to `frame`, else what is wrong with it."""
    (correlation_id,) = struct.unpack_from(">i", answer)
    if correlation_id != frame.correlation_id:
        return f"correlation id {correlation_id}, expected {frame.correlation_id}"
    version = frame.version
    if frame.api_key == API_VERSIONS and len(answer) >= 6 and struct.unpack_from(">h", answer, 4)[0] == 35:
        version = 0  # UNSUPPORTED_VERSION: the v0 fallback body
    response_type = load_response_schema(frame.api_key, version)
    offset = 4 + response_type.__header_schema__.__version__
    try:
        _, size = entity_reader(response_type)(answer, offset)
    except Exception as e:
        return f"undecodable answer ({type(e).__name__}: {e})"
    if offset + size != len(answer):
        return f"answer has {len(answer) - offset - size} bytes left over"
    return None


class FuzzSession:
    def __init__(
        self,
        host: str,
        port: int,
        pairs: list[tuple[int, int]],
        *,
        seed: int,
        connections: int = 4,
        answer_timeout_s: float = 1.0,
        probe_interval_s: float = 0.5,
        probe_bound_s: float = 5.0,
        canary_every: int = 500,
        progress: Callable[[Tally], None] | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.pairs = pairs
        self.rng = random.Random(seed)
        self.connections = connections
        self.answer_timeout_s = answer_timeout_s
        self.probe_interval_s = probe_interval_s
        self.probe_bound_s = probe_bound_s
        self.canary_every = canary_every
        self.progress = progress
        self.tally = Tally()
        self.canary_topic = f"canary-{uuid.uuid4().hex}"
        self._canary_acked: set[bytes] = set()
        self._next_correlation = 1
        self._round: list[tuple[int, int]] = []

    async def run(self, frames: int) -> Tally:
        stop = asyncio.Event()
        prober = asyncio.create_task(self._probe(stop))
        await self._canary()
        remaining = [frames]
        await asyncio.gather(*(self._attack(remaining) for _ in range(self.connections)))
        stop.set()
        await prober
        await self._canary()
        await self._check_canary()
        return self.tally

    def _next_pair(self) -> tuple[int, int]:
        """The next (api_key, version): every advertised pair once per shuffled round, so each gets its share."""
        if not self._round:
            self._round = list(self.pairs)
            self.rng.shuffle(self._round)
        return self._round.pop()

    def _correlation_id(self) -> int:
        self._next_correlation = self._next_correlation % 0x7FFFFFFF + 1
        return self._next_correlation

    async def _attack(self, remaining: list[int]) -> None:
        connection: _Connection | None = None
        while remaining[0] > 0:
            remaining[0] -= 1
            api_key, version = self._next_pair()
            frame = mutated_frame(api_key, version, self._correlation_id(), self.rng)
            self.tally.frames += 1
            self.tally.mutations[frame.mutation.split(" in ")[0]] += 1
            if connection is None:
                try:
                    connection = await asyncio.wait_for(_Connection.open(self.host, self.port), self.probe_bound_s)
                except (OSError, TimeoutError) as e:
                    self.tally.findings.append(f"cannot connect any more ({type(e).__name__}: {e})")
                    remaining[0] = 0
                    return
            try:
                answer = await connection.call(frame.data, self.answer_timeout_s)
            except (EOFError, ConnectionError):
                self.tally.closed += 1
                connection.close()
                connection = None
            except TimeoutError:
                self.tally.unanswered += 1
                connection.close()
                connection = None
            else:
                self.tally.answered += 1
                wrong = decode_answer(frame, answer)
                if wrong is not None:
                    self.tally.findings.append(f"api {api_key} v{version} ({frame.mutation}): {wrong}")
                    connection.close()
                    connection = None
            if self.tally.frames % self.canary_every == 0:
                await self._canary()
                if self.progress is not None:
                    self.progress(self.tally)
        if connection is not None:
            connection.close()

    async def _probe(self, stop: asyncio.Event) -> None:
        request = build(request_class(API_VERSIONS, 3), {"client_software_name": "p", "client_software_version": "1"})
        while not stop.is_set():
            began = time.perf_counter()
            try:
                connection = await asyncio.wait_for(_Connection.open(self.host, self.port), self.probe_bound_s)
                frame = Frame(encode_request(API_VERSIONS, 3, 1, request), API_VERSIONS, 3, 1, "probe")
                answer = await connection.call(frame.data, self.probe_bound_s)
                connection.close()
                wrong = decode_answer(frame, answer)
                if wrong is not None:
                    self.tally.findings.append(f"probe: {wrong}")
            except (TimeoutError, OSError, EOFError) as e:
                self.tally.findings.append(f"probe not answered within {self.probe_bound_s} s ({type(e).__name__})")
            elapsed = time.perf_counter() - began
            self.tally.probes += 1
            self.tally.slowest_probe_s = max(self.tally.slowest_probe_s, elapsed)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.probe_interval_s)

    async def _canary(self) -> None:
        """Produce one record (acks=all) to the canary topic; remember its value once acknowledged."""
        value = f"canary-{len(self._canary_acked)}-{self.rng.getrandbits(32)}".encode()
        batch = build_batch([RecordToWrite(value)], now_ms=int(time.time() * 1000))
        produce = request_class(PRODUCE, 9)
        module = _module_of(produce)
        partition = build(module.PartitionProduceData, {"index": 0, "records": batch})
        topic = build(module.TopicProduceData, {"name": self.canary_topic, "partition_data": (partition,)})
        request = build(produce, {"transactional_id": None, "acks": -1, "timeout": 30_000, "topic_data": (topic,)})
        frame = Frame(encode_request(PRODUCE, 9, 1, request), PRODUCE, 9, 1, "canary")
        answer = await self._call_once(frame.data, "canary produce")
        if answer is None:
            return
        response_type = load_response_schema(PRODUCE, 9)
        response, _ = entity_reader(response_type)(answer, 4 + response_type.__header_schema__.__version__)
        if response.responses[0].partition_responses[0].error_code == 0:
            self._canary_acked.add(value)
            self.tally.canary_acked += 1

    async def _call_once(self, data: bytes, what: str) -> bytes | None:
        """One request on a fresh connection; None (and a finding) when it is not answered in time."""
        try:
            connection = await asyncio.wait_for(_Connection.open(self.host, self.port), CANARY_TIMEOUT_S)
            try:
                return await connection.call(data, CANARY_TIMEOUT_S)
            finally:
                connection.close()
        except (OSError, EOFError, TimeoutError) as e:
            self.tally.findings.append(f"{what} not answered within {CANARY_TIMEOUT_S} s ({type(e).__name__})")
            return None

    async def _check_canary(self) -> None:
        fetch = request_class(FETCH, 12)
        module = _module_of(fetch)
        partition = build(module.FetchPartition, {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 64 << 20})
        topic = build(module.FetchTopic, {"topic": self.canary_topic, "partitions": (partition,)})
        request = build(
            fetch,
            {"max_wait": 0, "min_bytes": 1, "max_bytes": 64 << 20, "topics": (topic,), "forgotten_topics_data": ()},
        )
        answer = await self._call_once(encode_request(FETCH, 12, 1, request), "canary fetch")
        if answer is None:
            return
        response_type = load_response_schema(FETCH, 12)
        response, _ = entity_reader(response_type)(answer, 4 + response_type.__header_schema__.__version__)
        records = response.responses[0].partitions[0].records or b""
        found = {r.value for pos, _ in read_batches(records) for r in iter_records(records, pos)}
        lost = self._canary_acked - found
        if lost:
            self.tally.findings.append(f"{len(lost)} acknowledged canary records lost")


def _module_of(cls: type[Any]) -> Any:
    return sys.modules[cls.__module__]
