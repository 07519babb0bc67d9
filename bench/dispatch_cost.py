"""What one small Produce request costs the broker's request path alone: `server.dispatch` called in a loop, in
process, on the frame of a one-record Produce request, against a broker with the file engine (fsync off). No socket,
no event-loop turn, no client: the decode, the handler, the log append and the encoded answer.

    .venv/bin/python -m bench.dispatch_cost [--requests 20000] [--version 9] [--partitions 1] [--profile | --read]

`--partitions N` sends one record to each of N partitions per request, as a producer does that has records for
several partitions of one broker (its answer has N entries).

Prints the best of 5 repeats in µs per request (the frame and the log stay in the CPU's caches, so this is the
path's floor, not what a loaded broker pays). `--profile` runs the repeats under cProfile instead and prints the
functions by their own time, with the calls per request it sees (not those inside the compiled protocol modules):
the profile's overhead inflates every figure, so read its shares, not its times.

`--read` times, after each such request, the read a consumer that keeps up makes next: the batch just appended, as
a Fetch answer reads it (`Broker.fetch_for_send`, 1 MiB at most: the served handler calls the partition's
`read_for_send` itself, without this method's lookup), for the file engine and the memory engine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import pstats
import struct
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from bench import wire
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.server.dispatch import ServerInfo, dispatch

TOPIC = "dispatch-cost"
REPEATS = 5
WARM_UP = 2000  # requests before the timed repeats


def produce_frame(version: int, partitions: int = 1) -> bytes:
    """A Produce request frame (without its size prefix) of one 100 B record for each of partitions 0 to
    `partitions` - 1, acks=1, as a client with `linger.ms=0` sends it."""
    batch = bytes(build_batch([RecordToWrite(bytes(100))], now_ms=int(time.time() * 1000)))
    return wire.produce_frame(TOPIC, dict.fromkeys(range(partitions), batch), version, 7, timeout_ms=1000)[4:]


@contextlib.asynccontextmanager
async def warm_broker(
    frame: bytes, *, memory: bool = False, partitions: int = 1
) -> AsyncIterator[tuple[Broker, ServerInfo]]:
    """A broker with fsync off (the file engine, or the memory engine) and the topic, after `WARM_UP` requests of
    `frame`: the caches and the segment files warm."""
    with tempfile.TemporaryDirectory(prefix="kl-dispatch-cost-") as data:
        async with Broker(data_dir=None if memory else Path(data), fsync=False) as broker:
            await broker.create_topic(TOPIC, partitions)
            server = ServerInfo(0, "127.0.0.1", 9092)
            for _ in range(WARM_UP):
                await dispatch(broker, server, frame, "127.0.0.1")
            yield broker, server


async def run(requests: int, version: int, partitions: int, profile: cProfile.Profile | None) -> float:
    """The best µs per request over the repeats."""
    frame = produce_frame(version, partitions)
    async with warm_broker(frame, partitions=partitions) as (broker, server):
        best = float("inf")
        for _ in range(REPEATS):
            if profile is not None:
                profile.enable()
            began = time.perf_counter()
            for _ in range(requests):
                answer = await dispatch(broker, server, frame, "127.0.0.1")
            best = min(best, (time.perf_counter() - began) / requests)
            if profile is not None:
                profile.disable()
        appended = broker.partition(TOPIC, 0).log.log_end_offset
    if not isinstance(answer, bytes) or struct.unpack_from(">i", answer, 4)[0] != 7:
        raise RuntimeError(f"unexpected answer {answer!r}")
    if appended != WARM_UP + REPEATS * requests:
        raise RuntimeError(f"{appended} records appended, not {WARM_UP + REPEATS * requests}")
    return best * 1e6


async def read_cost(requests: int, *, memory: bool) -> float:
    """The best µs per read of the batch just appended, over the repeats (the appends themselves not timed)."""
    frame = produce_frame(9)
    async with warm_broker(frame, memory=memory) as (broker, server):
        log = broker.partition(TOPIC, 0).log
        best = float("inf")
        for _ in range(REPEATS):
            reading = 0.0
            for _ in range(requests):
                await dispatch(broker, server, frame, "127.0.0.1")
                offset = log.log_end_offset - 1
                began = time.perf_counter()
                found = broker.fetch_for_send(TOPIC, 0, offset, 1 << 20)
                reading += time.perf_counter() - began
                if not isinstance(found.records, bytes) or struct.unpack_from(">q", found.records)[0] != offset:
                    raise RuntimeError(f"the read at {offset} returned {found.records!r}")
            best = min(best, reading / requests)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000, help="requests per repeat (at least 1)")
    parser.add_argument("--version", type=int, default=9, help="Produce version (3-12)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions per request, one record each")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--profile", action="store_true")
    mode.add_argument("--read", action="store_true", help="time the read of the batch just appended instead")
    args = parser.parse_args()
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    if args.partitions < 1:
        parser.error("--partitions must be at least 1")
    if args.read:
        for engine, memory in (("file", False), ("memory", True)):
            per_read = asyncio.run(read_cost(args.requests, memory=memory))
            print(f"{per_read:.2f} µs per read of the batch just appended ({engine} engine), best of {REPEATS}")
        return
    profile = cProfile.Profile() if args.profile else None
    per_request = asyncio.run(run(args.requests, args.version, args.partitions, profile))
    shape = "one-record" if args.partitions == 1 else f"{args.partitions}-partition, one record each,"
    if profile is None:
        print(f"{per_request:.2f} µs per {shape} Produce request (v{args.version}), best of {REPEATS}")
    else:
        print(f"{per_request:.2f} µs per request under cProfile (inflated by the profile; run without for the cost)")
        stats = pstats.Stats(profile)
        calls = sum(entry[1] for entry in stats.stats.values())  # type: ignore[attr-defined]
        print(f"{calls / (REPEATS * args.requests):.0f} calls per request that cProfile sees (not those inside the")
        print("compiled protocol modules)")
        stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
