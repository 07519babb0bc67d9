"""What a run produced, as written to `bench/results/<timestamp>.json` and read back by `--report-only`.

    {"meta": {"command", "mode", "rounds", "started", "seconds", "machine": {...}, "versions": {...},
              "sections": {section: [{"name", "label", "how"}, ...]}},     # subjects in column order
     "records": [{"section", "family", "workload", "metric", "unit", "higher_is_better", "subject", "round",
                  "value"}, ...],
     "notes": [{"section", "subject", "workload", "round", "kind": "note" | "failure", "text"}, ...]}

The first subject of a section is its reference: ratios are reference ÷ subject.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.workloads import Metric


@dataclass
class Stats:
    median: float
    low: float
    high: float
    runs: int


@dataclass
class Row:
    section: str
    family: str
    workload: str
    metric: Metric
    values: dict[str, list[float]] = field(default_factory=dict)  # subject → one value per round

    def stats(self, subject: str) -> Stats | None:
        values = self.values.get(subject)
        if not values:
            return None
        return Stats(statistics.median(values), min(values), max(values), len(values))

    def median(self, subject: str) -> float | None:
        stats = self.stats(subject)
        return None if stats is None else stats.median


@dataclass
class Results:
    meta: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self, section: str, family: str, workload: str, subject: str, rnd: int, values: dict[Metric, float]
    ) -> None:
        for metric, value in values.items():
            self.records.append(
                {
                    "section": section,
                    "family": family,
                    "workload": workload,
                    "metric": metric.name,
                    "unit": metric.unit,
                    "higher_is_better": metric.higher_is_better,
                    "subject": subject,
                    "round": rnd,
                    "value": value,
                }
            )

    def note(self, section: str, subject: str, workload: str, rnd: int, kind: str, text: str) -> None:
        self.notes.append(
            {"section": section, "subject": subject, "workload": workload, "round": rnd, "kind": kind, "text": text}
        )

    def subjects(self, section: str) -> list[dict[str, str]]:
        return list(self.meta["sections"].get(section, []))

    def rows(self, section: str) -> list[Row]:
        """One row per (workload, metric), in the order the run first produced them."""
        rows: dict[tuple[str, str, str], Row] = {}
        for r in self.records:
            if r["section"] != section:
                continue
            key = (r["workload"], r["metric"], r["unit"])
            if key not in rows:
                metric = Metric(r["metric"], r["unit"], r["higher_is_better"])
                rows[key] = Row(section, r["family"], r["workload"], metric)
            rows[key].values.setdefault(r["subject"], []).append(r["value"])
        return list(rows.values())

    def failed(self, section: str, workload: str, subject: str) -> bool:
        return any(
            n["kind"] == "failure" and n["section"] == section and n["workload"] == workload and n["subject"] == subject
            for n in self.notes
        )

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"meta": self.meta, "records": self.records, "notes": self.notes}
        path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, path: Path) -> Results:
        body = json.loads(path.read_text())
        return cls(body["meta"], body["records"], body["notes"])
