"""Page rendering: the Jinja environment (templates shipped as package data, autoescaped) and display helpers.

Autoescaping is on for every template: keys, values, headers, topic and group names are untrusted input shown in
the page. Helpers here turn numbers into what people read (sizes, times, counts); nothing reads the broker.

Jinja is imported and its environment built on the first page rendered, not when the console starts: a broker
whose console only ever answers `/metrics` and the health checks never pays for it (about a quarter of the
console's start-up imports, `docs/benchmarks.md`).
"""

from __future__ import annotations

import datetime
import functools
import json
import string
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import jinja2

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_PRINTABLE = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")


def human_bytes(size: int | float) -> str:
    value = float(size)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_count(number: int | float) -> str:
    return f"{number:,}"  # the same grouping the page's script uses when it updates a figure


def timestamp(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "—"
    when = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def duration(seconds: float) -> str:
    """`7d`, `2h 30m`, `5m 3s`, `0s`: the two largest units, zeros left out."""
    rest = int(seconds)
    parts: list[tuple[int, str]] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count or parts:
            parts.append((count, unit))
    shown = [f"{count}{unit}" for count, unit in parts[:2] if count]
    return " ".join(shown) or "0s"


def retention(ms: str) -> str:
    """A `retention.ms` value for people: "forever" for -1, else a duration."""
    try:
        value = int(ms)
    except ValueError:
        return ms
    return "forever" if value < 0 else duration(value / 1000)


def as_text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def as_json(data: bytes | None) -> str | None:
    """Pretty JSON when `data` is a JSON document, else None."""
    if not data:
        return None
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=False)


def as_hex(data: bytes | None, limit: int = 4096) -> str | None:
    """A hexdump: offset, 16 bytes in hex, the printable ASCII; at most `limit` bytes."""
    if data is None:
        return None
    lines = []
    for pos in range(0, min(len(data), limit), 16):
        chunk = data[pos : pos + 16]
        hex_part = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if chr(b) in _PRINTABLE else "." for b in chunk)
        lines.append(f"{pos:08x}  {hex_part:<47}  {text}")
    if len(data) > limit:
        lines.append(f"… {len(data) - limit} more bytes")
    return "\n".join(lines)


def url_part(value: Any) -> str:
    return quote(str(value), safe="")


@functools.cache
def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kafkalite.http", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        bytes=human_bytes,
        count=human_count,
        ts=timestamp,
        duration=duration,
        retention=retention,
        q=url_part,
    )
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)
