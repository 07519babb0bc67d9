"""`kafkalite migrate`: copy topics, records and group positions from one Kafka cluster to another."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from kafkalite.admin import ClientSettings, parse_properties
from kafkalite.cli._cluster import cluster_command, output_option, print_json
from kafkalite.cli._common import fail
from kafkalite.migrate import (
    GroupResult,
    MigrationOptions,
    MigrationResult,
    PartitionCheck,
    TopicPlan,
    TopicProgress,
    migrate,
)


@click.command("migrate")
@cluster_command
@output_option
@click.option("--to", "to", metavar="HOST:PORT", help="Copy from -b to this cluster.")
@click.option("--from", "from_", metavar="HOST:PORT", help="Copy from this cluster to -b.")
@click.option("--to-X", "to_properties", multiple=True, metavar="KEY=VALUE", help="Client setting for --to.")
@click.option("--from-X", "from_properties", multiple=True, metavar="KEY=VALUE", help="Client setting for --from.")
@click.option("--topics", "topic_patterns", multiple=True, metavar="PATTERN", help="Glob; repeatable. Default: all.")
@click.option("--groups", "group_patterns", multiple=True, metavar="PATTERN", help="Glob; repeatable. Default: all.")
@click.option("--state", type=click.Path(dir_okay=False, path_type=Path), help="Progress file (default: see below).")
@click.option("--replication-factor", default=-1, type=click.IntRange(-1, 32_767), help="Of created topics.")
@click.option("--verify", is_flag=True, help="Afterwards, compare counts and checksums per partition.")
@click.option("--verify-only", is_flag=True, help="Compare only; copy nothing.")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: on a terminal).")
def migrate_command(
    settings: ClientSettings,
    output: str,
    to: str | None,
    from_: str | None,
    to_properties: tuple[str, ...],
    from_properties: tuple[str, ...],
    topic_patterns: tuple[str, ...],
    group_patterns: tuple[str, ...],
    state: Path | None,
    replication_factor: int,
    verify: bool,
    verify_only: bool,
    progress: bool | None,
) -> None:
    """Copy topics (partitions, configs), their records (same partition, key, value, headers, timestamp, in order)
    and every group's committed offsets (translated to the target's offsets) from -b to --to, or from --from to -b.

    Running the same command again resumes an interrupted migration, or copies what arrived since the last run.
    Progress is kept in --state, by default .kafkalite-migrate-SOURCE-to-TARGET.json in the current directory:
    per partition, the next source offset to copy and where the copied records landed on the target.

    \b
    Examples:
      kafkalite migrate -b localhost:9092 --to kafka-1:9092 --verify
      kafkalite migrate -b localhost:9092 --to kafka-1:9093 --to-X security.protocol=SASL_SSL \\
          --to-X sasl.mechanism=SCRAM-SHA-256 --to-X sasl.username=app --to-X sasl.password=secret
      kafkalite migrate -b localhost:9092 --to kafka-1:9092 --topics 'orders*' --groups billing
      kafkalite migrate -b localhost:9092 --from kafka-1:9092      # the other way round
    """
    if (to is None) == (from_ is None):
        fail("give exactly one of --to TARGET (copy from -b) or --from SOURCE (copy to -b)")
    if (to_properties and to is None) or (from_properties and from_ is None):
        fail("--to-X goes with --to and --from-X with --from")
    other = ClientSettings(
        to or from_ or "", parse_properties(to_properties or from_properties, "--to-X" if to else "--from-X"),
        settings.timeout_s,
    )  # fmt: skip
    source, target = (settings, other) if to else (other, settings)
    if source.bootstrap == target.bootstrap:
        fail(f"source and target are the same cluster ({source.bootstrap})")
    path = state or Path(f".kafkalite-migrate-{_slug(source.bootstrap)}-to-{_slug(target.bootstrap)}.json")
    options = MigrationOptions(
        state_path=path,
        topics=topic_patterns,
        groups=group_patterns,
        replication_factor=replication_factor,
        copy=not verify_only,
        verify=verify or verify_only,
    )
    show = progress if progress is not None else sys.stderr.isatty() and output == "text"
    with _Reporter(show, quiet=output == "json") as reporter:
        result = migrate(source, target, options, reporter)
    if output == "json":
        print_json(_document(result, source.bootstrap, target.bootstrap, path))
    else:
        _summary(result, path, copied=not verify_only)
    if not result.verified:
        bad = [f"{c.topic}[{c.partition}]" for c in result.checks if not c.ok]
        click.echo(f"kafkalite: verification failed: {', '.join(bad)} differ", err=True)
        sys.exit(1)


def _slug(bootstrap: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", bootstrap)


class _Reporter:
    """Progress bars per topic on stderr (rich), or one line per topic when they are off."""

    def __init__(self, show: bool, quiet: bool) -> None:
        self._show = show
        self._quiet = quiet
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self._reported: set[str] = set()

    def __enter__(self) -> _Reporter:
        if self._show:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def _say(self, text: str) -> None:
        if not self._quiet:
            click.echo(text, err=True)

    def planned(self, topics: Sequence[TopicPlan], created: Sequence[str]) -> None:
        if created:
            self._say(f"Created {len(created)} topic(s) on the target: {', '.join(created)}")

    def progress(self, progress: TopicProgress) -> None:
        started = self._started.setdefault(progress.topic, time.perf_counter())
        elapsed = max(time.perf_counter() - started, 1e-6)
        rate = f"{progress.bytes / elapsed / 1e6:.1f} MB/s"
        if self._bar is not None:
            task = self._tasks.get(progress.topic)
            if task is None:
                task = self._tasks[progress.topic] = self._bar.add_task(progress.topic, total=progress.total, rate="")
            self._bar.update(task, completed=progress.copied, total=max(progress.total, progress.copied), rate=rate)
        elif progress.total and progress.copied >= progress.total and progress.topic not in self._reported:
            self._reported.add(progress.topic)
            self._say(f"Copied {progress.topic}: {progress.copied} record(s), {progress.bytes} bytes, {rate}")

    def group(self, result: GroupResult) -> None:
        if result.skipped:
            self._say(f"Group {result.group}: skipped ({result.skipped})")
        else:
            self._say(f"Group {result.group}: {len(result.offsets)} committed offset(s) carried over")

    def verified(self, check: PartitionCheck) -> None:
        if not check.ok:
            self._say(
                f"MISMATCH {check.topic}[{check.partition}]: source {check.source_count} record(s) "
                f"sha256 {check.source_checksum[:16]}, target {check.target_count} sha256 {check.target_checksum[:16]}"
            )


def _summary(result: MigrationResult, path: Path, *, copied: bool) -> None:
    if copied:
        rate = result.bytes / result.seconds / 1e6 if result.seconds else 0.0
        click.echo(
            f"Migrated {len(result.topics)} topic(s), {result.records} record(s) ({result.bytes / 1e6:.1f} MB, "
            f"{rate:.1f} MB/s) and {sum(1 for g in result.groups if not g.skipped)} group(s) in "
            f"{result.seconds:.1f} s; progress in {path}"
        )
    if result.checks:
        good = sum(1 for c in result.checks if c.ok)
        click.echo(f"Verified {good} of {len(result.checks)} partition(s): counts and checksums match")


def _document(result: MigrationResult, source: str, target: str, path: Path) -> dict[str, Any]:
    return {
        "source": source,
        "target": target,
        "state": str(path),
        "topics": [asdict(t) for t in result.topics],
        "created": result.created,
        "copied": [asdict(p) for p in result.copied],
        "groups": [
            {"group": g.group, "skipped": g.skipped, "offsets": {k: list(v) for k, v in g.offsets.items()}}
            for g in result.groups
        ],
        "checks": [{**asdict(c), "ok": c.ok} for c in result.checks],
        "verified": result.verified if result.checks else None,
        "records": result.records,
        "bytes": result.bytes,
        "seconds": round(result.seconds, 3),
    }
