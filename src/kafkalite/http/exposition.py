"""The Prometheus text format (version 0.0.4) for the broker's metric families, written fast.

prometheus-client's `generate_latest` validates and escapes every label name of every sample (it supports UTF-8
metric names), which costs tens of microseconds a sample: with 1,000 partitions and 100 groups (about 6,000
samples) that alone is the whole scrape budget. The families here come from our own collector, whose metric and
label names are fixed ASCII identifiers, so only label values need escaping. `render` writes exactly what
`generate_latest` writes for the same families (`tests/web/test_exposition.py` holds them byte-equal) and is parsed
by Prometheus and by prometheus-client's parser alike.

The big families (a row per partition, per group and partition) are `Columns`: each row's label text rendered once
and kept by the collector from scrape to scrape, and a list of values. `render` writes them in one join with no
`Sample` per row; their `samples` are built on demand for prometheus-client's writer and parser.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from prometheus_client.core import Metric
from prometheus_client.samples import Sample

_SUFFIXES = {"counter": "_total"}


def _escape_value(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def go_float(value: float) -> str:
    """A sample value as Prometheus (after Go's strconv) writes it: `+Inf`, `NaN`, `12.0`, `1.2345678e+07`."""
    if type(value) is int and -1_000_000 < value < 1_000_000:  # most of ours (offsets, counts): no float needed
        return f"{value}.0"
    number = float(value)
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if math.isnan(number):
        return "NaN"
    text = repr(number)
    dot = text.find(".")
    if number > 0 and dot > 6:  # Go switches to an exponent sooner than Python's repr
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return text


def _labels_text(labels: dict[str, str]) -> str:
    if len(labels) == 1:
        ((key, value),) = labels.items()
        return f'{{{key}="{_escape_value(value)}"}}'
    return "{" + ",".join(f'{key}="{_escape_value(labels[key])}"' for key in sorted(labels)) + "}"


Row = tuple[dict[str, str], str]
"""One row of a `Columns` family: its labels, and their text as the exposition writes it (`label_text`)."""


def label_text(labels: dict[str, str]) -> str:
    """`{name="value",...}`: label names sorted, values escaped, as `generate_latest` writes them."""
    return _labels_text(labels)


class Columns(Metric):
    """A gauge family kept as columns: `rows` (labels and their rendered text, usually cached by the collector)
    and `values`, one per row."""

    def __init__(self, name: str, documentation: str, rows: list[Row], values: list[float]) -> None:
        super().__init__(name, documentation, "gauge")
        self.rows = rows
        self.values = values

    @property
    def samples(self) -> list[Sample]:
        return [Sample(self.name, labels, value) for (labels, _), value in zip(self.rows, self.values, strict=True)]

    @samples.setter
    def samples(self, value: list[Sample]) -> None:
        if value:  # Metric.__init__ sets it empty; anything else would be lost
            raise TypeError("a Columns family's samples are its rows and values")


def _columns_text(family: Columns) -> str:
    name = family.name
    return "".join(
        [
            f"{name}{text} {value}.0\n"
            if type(value) is int and -1_000_000 < value < 1_000_000  # go_float's common case, inlined
            else f"{name}{text} {go_float(value)}\n"
            for (_, text), value in zip(family.rows, family.values, strict=True)
        ]
    )


def render(families: Iterable[Metric]) -> bytes:
    out: list[str] = []
    add = out.append
    # The collector shares one labels dict between the families of a row (a partition's start, end and size; a
    # group's offset and lag): each is rendered once. Keyed by identity; the cache holds each dict, so no id is
    # reused by another dict during the call even when earlier families are already freed (a lazy collect).
    rendered: dict[int, tuple[dict[str, str], str]] = {}
    for family in families:
        name = family.name + _SUFFIXES.get(family.type, "")
        kind = family.type if family.type in ("counter", "gauge", "histogram", "summary") else "untyped"
        add(f"# HELP {name} {_escape_help(family.documentation)}\n# TYPE {name} {kind}\n")
        if isinstance(family, Columns):
            add(_columns_text(family))
            continue
        for sample in family.samples:
            labels = sample.labels
            if labels:
                cached = rendered.get(id(labels))
                if cached is None:
                    cached = rendered[id(labels)] = (labels, _labels_text(labels))
                label_text = cached[1]
            else:
                label_text = ""
            add(f"{sample.name}{label_text} {go_float(sample.value)}\n")
    return "".join(out).encode()
