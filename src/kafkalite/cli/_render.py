"""Tables on stdout through rich, imported only when a command prints one (start-up time of the other commands)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A plain table: no colours when stdout is not a terminal, numbers right-aligned, None shown as '-'."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=None, header_style="bold", pad_edge=False)
    rows = [list(row) for row in rows]
    for index, column in enumerate(columns):
        numeric = bool(rows) and all(isinstance(row[index], int | float) or row[index] is None for row in rows)
        table.add_column(column, justify="right" if numeric else "left", overflow="fold")
    for row in rows:
        table.add_row(*("-" if cell is None else str(cell) for cell in row))
    Console(highlight=False, soft_wrap=True).print(table)
