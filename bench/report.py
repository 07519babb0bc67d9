"""Tables, target checks, plots and the `docs/benchmarks.md` section, all rendered from a `Results`.

`publish` rewrites only the part of docs/benchmarks.md between `<!-- peers:start -->` and `<!-- peers:end -->`
(appending both markers when missing): the rest of that file belongs to other benchmarks. The file is read right
before it is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.machine import REFERENCE_LOOP
from bench.results import Results, Row
from bench.workloads import Metric

DOC = Path("docs/benchmarks.md")
IMG_DIR = Path("docs/img")
START, END = "<!-- peers:start -->", "<!-- peers:end -->"
REFERENCE = "kafkalite"


def number(value: float) -> str:
    """Three significant figures, with k/M for large values: 1.23M, 45.6k, 789, 12.3, 0.456."""
    magnitude = abs(value)
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if magnitude >= scale:
            return f"{_three_figures(value / scale)}{suffix}"
    return _three_figures(value)


def _three_figures(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def shown(values: dict[Metric, float]) -> str:
    return ", ".join(f"{m.name} {number(v)} {m.unit}" for m, v in values.items())


def _cell(results: Results, row: Row, subject: str) -> str:
    stats = row.stats(subject)
    if stats is None:
        return "failed" if results.failed(row.section, row.workload, subject) else "—"
    if stats.runs == 1:
        return number(stats.median)
    return f"{number(stats.median)} ({number(stats.low)}–{number(stats.high)})"


def _ratio(row: Row, reference: str, subject: str) -> str:
    ours, theirs = row.median(reference), row.median(subject)
    if ours is None or theirs is None or theirs == 0:
        return "—"
    return f"{ours / theirs:.2f}×"


def _markdown(header: list[str], body: Iterable[list[str]], numeric_from: int) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---" if i < numeric_from else "---:" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def section_table(results: Results, section: str) -> str:
    subjects = results.subjects(section)
    if not subjects or not results.rows(section):
        return ""
    reference, others = subjects[0], subjects[1:]
    header = ["workload", "metric", *(s["label"] for s in subjects)]
    header += [f"{reference['label']} ÷ {s['label']}" for s in others]
    body = []
    for row in results.rows(section):
        arrow = "↑" if row.metric.higher_is_better else "↓"
        cells = [row.workload, f"{row.metric.name} ({row.metric.unit}) {arrow}"]
        cells += [_cell(results, row, s["name"]) for s in subjects]
        cells += [_ratio(row, reference["name"], s["name"]) for s in others]
        body.append(cells)
    return _markdown(header, body, numeric_from=2)


def table(results: Results) -> str:
    return "\n\n".join(t for t in (section_table(results, "peers"), section_table(results, "embedded")) if t)


# --- targets (issue 5) -------------------------------------------------------------------------------------------


@dataclass
class Check:
    target: str
    met: bool | None  # None: not measured
    detail: str

    def line(self) -> str:
        status = {True: "**met**", False: "**missed**", None: "**not measured**"}[self.met]
        return f"- {self.target}: {status} — {self.detail}"


def _peer_rows(results: Results, family: str, unit: str, keep: Callable[[Row], bool] = lambda row: True) -> list[Row]:
    return [r for r in results.rows("peers") if r.family == family and r.metric.unit == unit and keep(r)]


def _ratio_check(target: str, rows: list[Row], peer: str, minimum: float, subject: str = REFERENCE) -> Check:
    """How many `rows` have `subject` at `minimum` × `peer` or better (for a lower-is-better metric: the peer's
    figure ÷ the subject's)."""
    ratios = [
        ((ours / theirs) if row.metric.higher_is_better else (theirs / ours), row.workload)
        for row in rows
        if (ours := row.median(subject)) and (theirs := row.median(peer))
    ]
    if not ratios:
        return Check(target, None, f"no {subject} and {peer} results to compare")
    worst, where = min(ratios)
    met = sum(ratio >= minimum for ratio, _ in ratios)
    detail = f"{met} of {len(ratios)} rows at ≥ {minimum:.1f}×; lowest {worst:.2f}× ({where})"
    if worst < minimum:
        detail += f", short by {minimum - worst:.2f}×"
    return Check(target, met == len(ratios), detail)


def _limit_check(results: Results, target: str, workload_text: str, metric: str, limit: float, at_most: bool) -> Check:
    row = _row(results, workload_text, metric)
    value = None if row is None else row.median(REFERENCE)
    if row is None or value is None:
        failures = [
            n["text"]
            for n in results.notes
            if n["kind"] == "failure" and n["subject"] == REFERENCE and workload_text in n["workload"]
        ]
        if failures:
            return Check(target, False, f"failed in {len(failures)} round(s): {failures[0].strip()}")
        return Check(target, None, "no KafkaLite result")
    met = value <= limit if at_most else value >= limit
    unit = row.metric.unit
    detail = f"{number(value)} {unit} (limit {'≤' if at_most else '≥'} {number(limit)} {unit})"
    if not met:
        factor = value / limit if at_most else limit / value if value else float("inf")
        detail += f", off by {factor:.1f}×"
    return Check(target, met, detail)


def _row(results: Results, workload_text: str, metric_name: str) -> Row | None:
    rows = [r for r in results.rows("peers") if workload_text in r.workload and r.metric.name == metric_name]
    if metric_name == "throughput":  # the 1 KiB target: the best 1 KiB row in MB/s
        rows = sorted((r for r in rows if r.metric.unit == "MB/s"), key=lambda r: -(r.median(REFERENCE) or 0.0))
    return rows[0] if rows else None


def targets(results: Results) -> list[Check]:
    produce = _peer_rows(results, "produce", "msg/s")
    consume = _peer_rows(results, "consume", "msg/s")
    cpu = _peer_rows(results, "produce", "µs") + _peer_rows(results, "consume", "µs")
    acks_1 = [r for r in produce if r.workload.endswith("acks=1")]
    acks_all = [r for r in produce if r.workload.endswith("acks=all")]
    checks = [
        _ratio_check("produce throughput ≥ 1.0× Tansu (fsync=always)", produce, "tansu", 1.0),
        _ratio_check("produce throughput ≥ 1.0× Tansu (fsync=never)", produce, "tansu", 1.0, "kafkalite-nofsync"),
        _ratio_check("consume throughput ≥ 1.0× Tansu", consume, "tansu", 1.0),
        _ratio_check(
            "broker CPU per message ≤ Tansu's (fsync=always), produce and consume rows (Tansu's ÷ KafkaLite's ≥ 1.0×)",
            cpu,
            "tansu",
            1.0,
        ),
        _ratio_check(
            "broker CPU per message ≤ Tansu's (fsync=never), produce and consume rows (Tansu's ÷ KafkaLite's ≥ 1.0×)",
            cpu,
            "tansu",
            1.0,
            "kafkalite-nofsync",
        ),
        _ratio_check("produce throughput ≥ 1.0× librdkafka's mock (fsync=always)", produce, "mock", 1.0),
        _ratio_check(
            "produce throughput ≥ 1.0× librdkafka's mock (fsync=never)", produce, "mock", 1.0, "kafkalite-nofsync"
        ),
        _ratio_check(
            "broker CPU per message ≤ the mock's (fsync=never), produce rows (the mock's ÷ KafkaLite's ≥ 1.0×; its "
            "consume rows read only what it kept)",
            _peer_rows(results, "produce", "µs"),
            "mock",
            1.0,
            "kafkalite-nofsync",
        ),
        _ratio_check("produce throughput ≥ 3× Redis Streams (acks=1 rows)", acks_1, "redis", 3.0),
        _ratio_check("consume throughput ≥ 3× Redis Streams", consume, "redis", 3.0),
        _ratio_check("acks=all produce with fsync ≥ 0.8× the same with fsync off", acks_all, "kafkalite-nofsync", 0.8),
        _limit_check(
            results, "subscribe → first message ≤ 0.5 s", "group consume", "subscribe → first message", 0.5, True
        ),
        _limit_check(results, "end-to-end p99 ≤ 5 ms at 10,000 msg/s", "at 10,000 msg/s", "p99", 5.0, True),
        _limit_check(results, "end-to-end p99 ≤ 20 ms at 100,000 msg/s", "at 100,000 msg/s", "p99", 20.0, True),
        _limit_check(
            results, "1 KiB messages: ≥ 500 MB/s produce (best 1 KiB row)", "produce 1 KiB", "throughput", 500.0, False
        ),
        _limit_check(
            results,
            "consume ≥ 1 GB/s at 1 KiB messages from the page cache (raw Fetch)",
            "consume 1 KiB · 8 partitions · raw Fetch",
            "throughput",
            1000.0,
            False,
        ),
        _ratio_check(
            "fsync=always ≥ 0.8× fsync=never at 8 partitions (acks=all)",
            [r for r in acks_all if "8 partitions" in r.workload],
            "kafkalite-nofsync",
            0.8,
        ),
        _limit_check(results, "start ≤ 0.3 s to the ready line", "start-up", "spawn → ready line", 0.3, True),
        _limit_check(results, "idle RSS ≤ 40 MB", "start-up", "idle RSS", 40.0, True),
        _limit_check(results, "10,000 partitions served", "10,000 partitions", "served", 100.0, False),
        _limit_check(results, "1,000 connections served", "connections", "served", 100.0, False),
    ]
    return checks


# --- plots -------------------------------------------------------------------------------------------------------


def _bar_chart(results: Results, rows: list[Row], title: str, unit: str, path: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    subjects = results.subjects("peers")
    if not rows:
        return None
    height = 0.8 / len(subjects)
    figure, axes = plt.subplots(figsize=(10, 0.5 + 0.45 * len(rows) * max(2, len(subjects)) / 2))
    for i, subject in enumerate(subjects):
        stats = [row.stats(subject["name"]) for row in rows]
        positions = [n + i * height for n in range(len(rows))]
        medians = [s.median if s else 0.0 for s in stats]
        errors = [[s.median - s.low if s else 0.0 for s in stats], [s.high - s.median if s else 0.0 for s in stats]]
        axes.barh(positions, medians, height, xerr=errors, label=subject["label"], capsize=2)
    axes.set_yticks([n + height * (len(subjects) - 1) / 2 for n in range(len(rows))])
    names = [row.workload if row.metric.name == "throughput" else f"{row.workload} — {row.metric.name}" for row in rows]
    axes.set_yticklabels(names, fontsize=8)
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.set_xlabel(f"{unit} (log scale; median of rounds, bars span min–max)")
    axes.set_title(title)
    figure.legend(fontsize=8, loc="lower center", ncol=len(subjects))
    axes.grid(axis="x", which="both", alpha=0.3)
    figure.tight_layout(rect=(0, 0.05, 1, 1))  # room for the legend below
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plots(results: Results, img_dir: Path = IMG_DIR) -> list[Path]:
    throughput = _peer_rows(results, "produce", "msg/s") + _peer_rows(results, "consume", "msg/s")
    latency = _peer_rows(results, "latency", "ms")
    made = [
        _bar_chart(
            results,
            throughput,
            "Throughput per peer (confluent-kafka / redis-py client)",
            "msg/s",
            img_dir / "bench-throughput.png",
        ),
        _bar_chart(
            results,
            latency,
            "End-to-end latency per peer (100 B records, 1 partition)",
            "ms",
            img_dir / "bench-latency.png",
        ),
    ]
    return [p for p in made if p is not None]


# --- the docs section ----------------------------------------------------------------------------------------------


def _notes(results: Results) -> list[str]:
    grouped: dict[tuple[str, str, str, str], list[int]] = {}
    for n in results.notes:
        grouped.setdefault((n["kind"], n["subject"], n["workload"], n["text"]), []).append(n["round"] + 1)
    lines = []
    for (kind, subject, workload, text), rounds in sorted(grouped.items()):
        where = f"round{'s' * (len(rounds) > 1)} {', '.join(map(str, rounds))}"
        lines.append(f"- {kind}: {subject}, {workload} ({where}): {text.strip()}")
    return lines or ["- none"]


def _how(results: Results) -> str:
    meta, sizes = results.meta, results.meta["sizes"]
    peers = "\n".join(f"  - **{p['label']}**: {p['how']}" for p in results.subjects("peers"))
    return f"""\
- Each round starts every peer fresh, in turn, on 127.0.0.1 (the peers in the order below, round after round;
  {meta["rounds"]} round(s)), and runs every workload against it with fresh topics; then KafkaLite embedded and the
  seed design, alternating.
  Cells are the median over rounds with (min–max); ratio columns are KafkaLite (`--fsync always`, the default) ÷
  the peer. ↑ marks rows where higher is better, ↓ rows where lower is better (times, memory): there a ratio below
  1 favours KafkaLite.
- Peers:
{peers}
- Kafka client: confluent-kafka {meta["versions"].get("confluent-kafka")} (librdkafka
  {meta["versions"].get("librdkafka")}) in the bench process, one producer per run: `linger.ms=5`, the row's `acks`,
  records sent to explicit partitions round-robin, delivery reports for errors only; throughput is acknowledged
  records ÷ time to the final `flush()`, MB/s counts record values only. Group consumer: a new group,
  `auto.offset.reset=earliest`, `fetch.queue.backoff.ms=0`, `fetch.wait.max.ms=10`, `enable.partition.eof=true`,
  `consume(10000)` in a loop until every record came or every partition reported its end; its throughput counts from
  the first batch to the last record (the time to join the group is the separate "subscribe → first message" row).
  With librdkafka's default back-off (no Fetch for 1 s once 100,000 messages are queued) the consumer idled for
  most of each second: full runs before 2026-12-03 read 150,000–210,000 msg/s from every peer on this row. With its
  default `fetch.wait.max.ms` (500 ms) a Fetch naming only partitions already read to their end held the consumer
  up to half a second a round ("A Fetch of partitions read to their end" below).
  Produce size: {sizes["produce_small"]:,} records of 100 B, {sizes["produce_large"]:,} of 1 KiB; the consume run
  first fills an 8-partition topic with {sizes["consume"]:,} × 100 B (acks=1, not timed).
- Rows that take the client out of the way (Kafka peers only; `bench/clients.py`, `bench/wire.py`):
  "N clients" produce rows run {sizes.get("producer_processes", 4)} producer processes at once (spawned, each its own
  confluent-kafka producer on its share of the partitions and of the records, started on a barrier; throughput is
  every acknowledged record ÷ (last finish − first start)); "N clients, whole batches" consume rows run as many
  consumer processes, each assigned its share of the partitions from the beginning, counting whole `consume(10000)`
  batches to the partitions' end; "raw Fetch" rows read all 8 partitions over one connection with Fetch v11 (one
  request in flight, Kafka's default 50 MiB / 1 MiB limits) decoded by kio down to the records field, counting
  records from batch headers, never decoding them: the broker's fetch path with a client whose cost per byte is a
  `recv` and a copy (timed from the first request to the last records). The consume rows read
  {sizes["consume"]:,} × 100 B or {sizes.get("consume_large", 0):,} × 1 KiB, written first (acks=1, not timed).
- Broker CPU per message (produce and consume rows): the broker process's CPU time (user + system, all its
  threads, from /proc/<pid>/stat) over the row's client calls, divided by the records acknowledged or read. The
  window is a little wider than the throughput's: a produce row's from the producer's creation to its final flush,
  a consume row's from the consumers' start to their close (the group consume row includes subscribing and the
  group join), a raw Fetch row's from the connection on. Where the clients limit a row's throughput, this is the
  figure that ranks the brokers. Its resolution is the kernel's 10 ms clock tick: a row whose broker spends well
  under a second of CPU (the raw Fetch rows, and most of the mock's: a few ticks to a few tens) carries that as an
  error of several percent or more. The mock lives on threads
  of the bench process, next to the single-client rows' client: its figure is the CPU time of the thread that
  creating it started to serve every request ("rdk:mock"; its handle's other threads idle), read from
  /proc/self/task (runs from before the bench measured it show "—").
- The mock is not a log: each of its partitions keeps at most 5 MiB and 100,000 batches and drops the oldest
  (librdkafka's mock partition limits). Its produce rows store a window it writes over again, and its consume rows
  read what is left when a topic holds more than 5 MiB a partition (its shortfall is under "Notes and failures").
- Redis Streams: redis-py {meta["versions"].get("redis")}; a partition is a stream `<topic>-<n>`; produce is
  pipelined `XADD` (1,000 per round trip); consume is `XREADGROUP … NOACK COUNT 10000` over all streams of a new
  group from id 0; no acks=all, many-partition or connection rows (no equivalent).
- End-to-end latency: 100 B records into one partition at a fixed rate for {sizes["latency_s"]:.0f} s
  (producer `linger.ms=0`, `acks=1`, the records due at each tick sent together; Redis: one pipeline of `XADD`s per
  tick), read by a consumer in a child process (assigned partition, no group, `poll()` per record, client defaults
  otherwise, so `fetch.wait.max.ms=500`; Redis: `XREAD BLOCK`); age = arrival − the send time written in the
  record (both processes read CLOCK_MONOTONIC). A broker that answers a waiting Fetch only when
  `fetch.wait.max.ms` runs out, rather than when data arrives, shows it here: with `fetch.wait.max.ms=10` the mock's
  p50 at 1,000 msg/s fell from 282 ms to 5.6 ms (checked once by hand, not part of the table). At `linger.ms=0`
  the producer sends a request for every few records (1.2 a request at 10,000 msg/s, 7 at 100,000), so these rows
  measure each broker's cost per request more than anything else. Each row also gives the broker's CPU over the
  sending window (% of one core) and the CPU of the sender, the receiver and the broker together (% of all the
  host's cores; runs before 2026-12-01 16:00 UTC gave the host's busy share from /proc/stat instead, "host CPU busy",
  which this VM at times under-reported): the three share the machine, and near 100% all three queue.
- acks=all answered: 100 B records at {sizes.get("answer_rate", 10_000):,} msg/s for {sizes["latency_s"]:.0f} s,
  round-robin over 8 partitions, from one producer with `acks=all` and `linger.ms=0`; age = the delivery report's
  arrival (a thread polls the producer) − the send time written in the record: how long a caller waits for a
  durable write (records unanswered at the deadline are noted, not counted). KafkaLite with fsync=always answers
  after the fsync round that covers the record (every partition's rounds run on one thread); KafkaLite fsync=never
  and in memory, Tansu (memory storage) and the mock have nothing to sync and answer once the record is stored;
  no Redis row.
- Many partitions: one topic of N partitions (creation timed), then {sizes["records_per_partition"]} × 100 B
  records per partition, acks=1. Connections: {sizes["connections"]:,} raw sockets opened at once, each sending
  Metadata v1 then one Produce v3 (one 100 B record, acks=1), all held open until every one is answered
  (raw sockets with kio, because a thousand librdkafka clients would measure their own thread start-up).
  As soon as a broker stops, the files of its data directory are cut to zero length; the directories are deleted
  when the bench exits. On ext4 without a journal (this machine's disk) a new file skips every inode deleted in
  the last minute or more, so deleting a peer's 30,000 files made the next peer's 10,000-partition topic slower to
  create: 2–6× in the full run of 946228b, up to 17× by hand. Runs started before 2026-12-03 12:40 UTC deleted
  each directory at once; a run started within minutes of large deletions on the same disk still pays for them.
- Start-up: from spawning the process to its ready line, and to a first successful Metadata (Redis: PING) from a
  new client; idle RSS (psutil) {sizes["idle_settle_s"]:.0f} s after that. Where the time to the ready line went, from
  the broker's main thread's schedstat at that moment: on a CPU, runnable but waiting for one, and the rest not
  running (blocked on a file, a lock or another of its threads; the spawn and the bench's read of the line count
  there too, so it means most for a broker that starts on one thread); the kernel CPU time of all its threads,
  which tells a thread busy in the kernel from one waiting on the disk; and what its threads had read from the disk
  (`read_bytes` in /proc/<pid>/io): the files a start did not find in the page cache. What those reads cost depends
  on what else the disk is doing; `python -m bench.start_watch` beside a run names each wait and its file. Runs
  before 2026-12-03 13:30 UTC have none of these rows, runs before 14:00 UTC not the kernel CPU, runs before 14:38 UTC
  not the disk. The mock cluster lives in the bench process: its "ready" is the creation of the cluster and it has no
  RSS of its own.
- Bounds: every workload stops at {sizes["workload_timeout_s"]:.0f} s; a run cut short says so under
  "Notes and failures". The machine was shared with other work during the run (see the load average), and the
  client shares the CPUs with the broker: compare ratios within this run rather than absolute numbers across runs."""


def client_ceilings(results: Results) -> list[str]:
    """For each row measured both by one client and by a client out of the way (several processes, or raw Fetch),
    the fastest peer's figure under each: where the second is well above the first, one client was the limit, and
    every peer near that first figure in the single-client row is client-bound."""
    rows = {row.workload: row for row in results.rows("peers") if row.metric.unit == "msg/s"}
    pairs = [
        (single, other)
        for single in rows
        for other in rows
        if single != other
        and (
            other == single.replace(" · acks=", " · 4 clients · acks=")
            or (single.startswith("group consume 100 B") and other.startswith("consume 100 B · 8 partitions · raw"))
        )
    ]
    lines = []
    for single, other in pairs:
        best_single = _best(rows[single], results)
        best_other = _best(rows[other], results)
        if best_single is None or best_other is None:
            continue
        (label_single, value_single), (label_other, value_other) = best_single, best_other
        verdict = "one client is the limit there" if value_other > 1.2 * value_single else "not client-bound"
        lines.append(
            f"- {single}: fastest {label_single} at {number(value_single)} msg/s; {other}: fastest {label_other} at "
            f"{number(value_other)} msg/s ({value_other / value_single:.2f}×): {verdict}"
        )
    return lines or ["- no row was measured both ways in this run"]


def _best(row: Row, results: Results) -> tuple[str, float] | None:
    found = [(s["label"], m) for s in results.subjects("peers") if (m := row.median(s["name"])) is not None]
    return max(found, key=lambda item: item[1]) if found else None


def _reference_loop(m: dict[str, str]) -> str:
    """The host's speed at the run's start and end, where the run recorded it (from 2026-12-03 14:50 UTC)."""
    if "reference loop at start" not in m:
        return ""
    end = m.get("reference loop at end", "not measured")
    return (
        f"A fixed loop of {REFERENCE_LOOP:,} Python additions in a fresh interpreter (the host's speed, to compare "
        f"runs) took {m['reference loop at start']} of CPU at the start and {end} at the end. "
    )


def _machine(results: Results) -> str:
    m = results.meta["machine"]
    v = results.meta["versions"]
    return (
        f"{m['nproc']} CPUs (`nproc`), {m['cpu']}, {m['memory']} RAM, Linux {m['kernel']}, Python {m['python']}; "
        f"load average at start {m['load average at start']}; open-file limit {m.get('open-file limit', '?')} "
        "(the brokers inherit it). "
        + _reference_loop(m)
        + f"Versions: KafkaLite {v.get('kafkalite')} (commit {v.get('kafkalite commit')}), Tansu {v.get('tansu')}, "
        f"redis-server {v.get('redis-server')}, kio {v.get('kio')}."
    )


def render_section(results: Results, json_path: Path, images: list[Path], doc_dir: Path) -> str:
    meta = results.meta
    checks = "\n".join(c.line() for c in targets(results))
    figures = "\n\n".join(f"![{p.stem}]({os.path.relpath(p, doc_dir)})" for p in images)
    return f"""{START}
## Peers: KafkaLite served against Tansu, librdkafka's mock cluster and Redis Streams

Generated by `python -m bench` (also `make bench`) from `{json_path.name}` — do not edit by hand; re-render with
`python -m bench --report-only {json_path}`.

Command: `{meta["command"]}` ({meta["mode"]} mode, {meta["rounds"]} round(s), {meta.get("seconds", 0) / 60:.0f} min,
started {meta["started"]}).

Machine: {_machine(results)}

### Results

{section_table(results, "peers")}

### Targets (issues 5 and 13)

{checks}

### Client ceilings

The same client against the fastest peer, alone and with the client out of the way (several processes, or raw
Fetch requests whose records are never decoded): a row whose figures sit near the first is measuring the client.

{chr(10).join(client_ceilings(results))}

### Notes and failures

{chr(10).join(_notes(results))}

### Plots

{figures}

### Embedded mode against the seed design

`bench/embedded_bench.py`'s two designs, alternating within each round (KafkaLite embedded in memory with
`send_batch` of 1,000, against the seed article's list-per-partition broker).

{section_table(results, "embedded")}

### How it was measured

{_how(results)}
{END}"""


def publish(results: Results, json_path: Path, doc: Path = DOC, img_dir: Path = IMG_DIR) -> None:
    images = plots(results, img_dir)
    section = render_section(results, json_path, images, doc.parent)
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        text = before + section + after
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text)
