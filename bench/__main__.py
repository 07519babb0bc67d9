"""`python -m bench`: KafkaLite served against its peers, and embedded against the seed design.

    python -m bench                  # full run (3 rounds, ~20 min); writes the JSON, docs/benchmarks.md and plots
    python -m bench --quick          # smoke run (small counts, 1 round, ~2 min); prints and writes the JSON only
    python -m bench --report-only bench/results/<file>.json    # re-render the docs from a run, without running

Each round starts every peer fresh in turn (A B C D E, A B C D E, ...) on 127.0.0.1 and runs every workload
against it, then runs the embedded comparison (KafkaLite embedded, then the seed design). Tables hold the median
over rounds with min–max, and the ratio KafkaLite ÷ peer.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import resource
import shlex
import sys
import time
import traceback
from pathlib import Path

from bench import report
from bench.brokers import EXTRA_PEERS, PEERS, Peer, baseline_peer
from bench.machine import machine, reference_loop_seconds, versions
from bench.results import Results
from bench.workloads import EMBEDDED_SUBJECTS, FULL, QUICK, Sizes, Workload, embedded_round, plan, session_for

RESULTS_DIR = Path("bench/results")
EMBEDDED_LABELS = {"embedded": "KafkaLite embedded", "seed": "seed design"}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _raise_open_file_limit() -> None:
    """1,000 client sockets here, as many in the broker (it inherits the limit)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65_536) if hard > 0 else 65_536, hard))


def _run_peer(peer: Peer, rnd: int, workloads: list[Workload], sizes: Sizes, results: Results) -> None:
    applicable = [w for w in workloads if peer.wire in w.wires]
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(peer.start())
        except Exception as exc:
            for workload in applicable:
                results.note("peers", peer.name, workload.label, rnd, "failure", f"did not start: {exc}")
            _say(f"  {peer.name}: did not start: {exc}")
            return
        session = session_for(running, sizes)
        for workload in applicable:
            began = time.perf_counter()
            try:
                outcome = workload.run(session)
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}"
                if running.exit_code() is not None:
                    text += f" (broker exited with {running.exit_code()}; its last output: {running.recent_output()})"
                results.note("peers", peer.name, workload.label, rnd, "failure", text)
                _say(f"  {peer.name:<18} {workload.label:<52} FAILED {text}")
                if running.exit_code() is not None:
                    return
                continue
            results.add("peers", workload.family, workload.label, peer.name, rnd, outcome.values)
            for text in outcome.notes:
                results.note("peers", peer.name, workload.label, rnd, "note", text)
            _say(
                f"  {peer.name:<18} {workload.label:<52} {report.shown(outcome.values)}"
                f" ({time.perf_counter() - began:.1f} s)"
            )


def _run_embedded(rnd: int, sizes: Sizes, results: Results) -> None:
    label = f"{sizes.embedded_records:,} × 100 B · {sizes.embedded_partitions} partitions, produce then consume"
    for subject in EMBEDDED_SUBJECTS:
        try:
            values = embedded_round(subject, sizes)
        except Exception as exc:
            results.note("embedded", subject, label, rnd, "failure", "".join(traceback.format_exception_only(exc)))
            continue
        results.add("embedded", "embedded", label, subject, rnd, values)
        _say(f"  {subject:<18} {label:<52} {report.shown(values)}")


def run(sizes: Sizes, peers: list[Peer], workloads: list[Workload], command: str, embedded: bool) -> Results:
    started = datetime.datetime.now(datetime.UTC)
    results = Results(
        meta={
            "command": command,
            "mode": sizes.mode,
            "rounds": sizes.rounds,
            "sizes": dataclasses.asdict(sizes),
            "started": started.isoformat(timespec="seconds"),
            "machine": machine(),
            "versions": versions(),
            "sections": {
                "peers": [{"name": p.name, "label": p.label, "how": p.how} for p in peers],
                "embedded": [{"name": s, "label": EMBEDDED_LABELS[s], "how": ""} for s in EMBEDDED_SUBJECTS],
            },
        }
    )
    began = time.perf_counter()
    for rnd in range(sizes.rounds):
        for peer in peers:
            _say(f"round {rnd + 1}/{sizes.rounds} · {peer.label}")
            _run_peer(peer, rnd, workloads, sizes, results)
        if embedded:
            _say(f"round {rnd + 1}/{sizes.rounds} · embedded against the seed design")
            _run_embedded(rnd, sizes, results)
    results.meta["seconds"] = round(time.perf_counter() - began, 1)
    results.meta["machine"]["reference loop at end"] = f"{reference_loop_seconds():.3f} s"
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, 1 round: a smoke run of every workload")
    parser.add_argument("--rounds", type=int, help="override the mode's number of rounds")
    parser.add_argument(
        "--peers",
        help="comma-separated subset of: "
        + ", ".join(p.name for p in PEERS)
        + "; or also of these, run only when named: "
        + ", ".join(p.name for p in EXTRA_PEERS),
    )
    parser.add_argument(
        "--only",
        action="append",
        help="run only workloads whose label contains this text; repeatable (start-up always runs)",
    )
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded-against-seed comparison")
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        metavar="SOURCE_DIR",
        help="also run KafkaLite from SOURCE_DIR/src (e.g. `git archive main | tar -x -C DIR`) as a peer: a change "
        "measured against the code before it, in the same run; repeatable (one peer per tree, named after it)",
    )
    parser.add_argument("--baseline-fsync", default="always", help="the baseline's --fsync (default: always)")
    parser.add_argument("--docs", action=argparse.BooleanOptionalAction, help="write docs/ (default: full runs only)")
    parser.add_argument("--report-only", type=Path, metavar="RESULTS_JSON", help="re-render from a run's JSON")
    args = parser.parse_args(argv)

    if args.report_only:
        results = Results.load(args.report_only)
        print(report.table(results))
        report.publish(results, args.report_only)
        return

    sizes = QUICK if args.quick else FULL
    if args.rounds:
        sizes = dataclasses.replace(sizes, rounds=args.rounds)
    wanted = set(args.peers.split(",")) if args.peers else {p.name for p in PEERS}
    unknown = wanted - {p.name for p in PEERS + EXTRA_PEERS}
    if unknown:
        parser.error(f"unknown peers: {', '.join(sorted(unknown))}")
    peers = [p for p in PEERS + EXTRA_PEERS if p.name in wanted]
    for number, source in enumerate(args.baseline or ()):
        peers.insert(1 + number, baseline_peer(source, args.baseline_fsync))
    workloads = [
        w for w in plan(sizes) if not args.only or w.family == "start" or any(text in w.label for text in args.only)
    ]
    command = shlex.join(["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])

    _raise_open_file_limit()
    results = run(sizes, peers, workloads, command, embedded=not args.no_embedded)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = RESULTS_DIR / f"{stamp}-{sizes.mode}.json"
    results.save(path)
    print(report.table(results))
    _say(f"results: {path}")
    if args.docs if args.docs is not None else sizes.mode == "full":
        report.publish(results, path)


if __name__ == "__main__":
    main()
