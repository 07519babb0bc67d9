"""`python -m bench.fuzz`: the structure-aware fuzzer, run by hand against a fresh `kafkalite serve`.

    python -m bench.fuzz                      # 1,000,000 frames (the published run), seed 1
    python -m bench.fuzz --frames 20000 --seed 7 --json bench/results/fuzz.json
    python -m bench.fuzz --secured --frames 100000   # SASL and TLS listeners: pre-auth frames, SASL tokens, TLS garbage

Every (api_key, version) the broker advertises gets valid and mutated requests (see `bench.fuzz.frames`); the run
ends with one line of figures and a non-zero exit when anything was found: an undecodable answer, a slow prober, a
lost acknowledged record, a traceback in the broker's log, or the broker's memory grown past `--max-growth-mib` once
the topics and groups the frames created are deleted (`bench.fuzz.cleanup`).
The tests run the same session at a modest size (tests/server/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from bench.fuzz.cleanup import delete_created_state
from bench.fuzz.secured import fuzz_secured, served_secured_broker
from bench.fuzz.session import FuzzSession, Tally
from bench.fuzz.target import Target, served_broker
from kafkalite.server.dispatch import supported_ranges
from kafkalite.server.handlers import __name__ as _handlers  # registers every handler

MIB = 1 << 20
PROGRESS_EVERY = 50_000


def advertised_pairs() -> list[tuple[int, int]]:
    """Every (api_key, version) the broker serves, as its ApiVersions answer lists them."""
    assert _handlers
    return [(key, version) for key, low, high in supported_ranges() for version in range(low, high + 1)]


def fuzz(target: Target, frames: int, seed: int, *, quiet: bool = False, **settings: float) -> dict[str, object]:
    """Run one session against `target`; its figures and findings (log tracebacks and memory growth included)."""
    rss_before = target.rss_bytes()
    began = time.perf_counter()
    printed = [0]

    def progress(tally: Tally) -> None:
        if not quiet and tally.frames >= printed[0] + PROGRESS_EVERY:
            printed[0] = tally.frames - tally.frames % PROGRESS_EVERY
            rate = tally.frames / (time.perf_counter() - began)
            print(f"  {tally.frames:>9,} frames  {rate:,.0f}/s  rss {target.rss_bytes() / MIB:.1f} MiB", flush=True)

    session = FuzzSession(target.host, target.port, advertised_pairs(), seed=seed, progress=progress, **settings)
    tally = asyncio.run(session.run(frames))
    seconds = time.perf_counter() - began
    findings = list(tally.findings)
    findings += [f"broker log: {line}" for line in target.tracebacks()]
    if not target.alive():
        findings.append("the broker exited")
    rss_after = target.rss_bytes() if target.alive() else 0
    created = delete_created_state(f"{target.host}:{target.port}") if target.alive() else None
    rss_cleaned = target.rss_bytes() if target.alive() else 0
    return {
        **tally.as_dict(),
        "findings": findings,
        "seconds": round(seconds, 1),
        "frames_per_s": round(tally.frames / seconds),
        "rss_before_mib": round(rss_before / MIB, 1),
        "rss_after_mib": round(rss_after / MIB, 1),
        "created": asdict(created) if created else None,
        "rss_after_cleanup_mib": round(rss_cleaned / MIB, 1),
        "mutations": dict(tally.mutations.most_common()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--answer-timeout", type=float, default=1.0, help="seconds to wait for an answer")
    parser.add_argument("--max-growth-mib", type=float, default=64.0, help="memory growth allowed over the run")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--log", type=Path, help="keep the broker's log here (default: a temporary file)")
    parser.add_argument("--secured", action="store_true", help="fuzz SASL_PLAINTEXT and SSL listeners instead")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        log = args.log or Path(scratch) / "broker.log"
        if args.secured:
            with served_secured_broker(log) as secured:
                print(
                    f"fuzzing secured listeners of kafkalite serve (pid {secured.process.pid}): {args.frames:,} frames"
                )
                figures = fuzz_secured(
                    secured, advertised_pairs(), args.frames, args.seed, connections=args.connections
                )
        else:
            with served_broker(log) as target:
                print(f"fuzzing kafkalite serve (pid {target.process.pid}, port {target.port}): {args.frames:,} frames")
                figures = fuzz(
                    target, args.frames, args.seed, connections=args.connections, answer_timeout_s=args.answer_timeout
                )
    after = figures.get("rss_after_cleanup_mib", figures["rss_after_mib"])  # the secured run keeps no created state
    growth = float(after) - float(figures["rss_before_mib"])  # type: ignore[arg-type]
    findings = list(figures["findings"])  # type: ignore[call-overload]
    if growth > args.max_growth_mib:
        findings.append(f"memory grew {growth:.1f} MiB beyond the state the frames created")
    figures["findings"] = findings
    print(json.dumps({k: v for k, v in figures.items() if k != "mutations"}, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
