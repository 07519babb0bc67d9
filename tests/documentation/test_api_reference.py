"""The API reference pages document every public name `kafkalite` exports, and name only objects that exist."""

from __future__ import annotations

import importlib
import re

import kafkalite

from .hooks import DOCS

REFERENCE = DOCS / "reference"
_DIRECTIVE = re.compile(r"^::: ([\w.]+)$", re.MULTILINE)


def _documented() -> set[str]:
    return {name for page in REFERENCE.glob("*.md") for name in _DIRECTIVE.findall(page.read_text(encoding="utf-8"))}


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute)
        return obj
    raise AssertionError(f"{dotted} does not resolve")


def test_every_public_name_has_a_reference_entry() -> None:
    documented = _documented()
    for name in kafkalite.__all__:
        obj = getattr(kafkalite, name)
        covered = f"kafkalite.{name}" in documented or getattr(obj, "__module__", None) in documented
        assert covered, f"kafkalite.{name} has no `::: kafkalite.{name}` (nor its module) in docs/reference"


def test_every_reference_entry_exists() -> None:
    for dotted in _documented():
        _resolve(dotted)


def test_server_helpers_are_documented() -> None:
    import kafkalite.server

    documented = _documented()
    for name in kafkalite.server.__all__:
        assert f"kafkalite.server.{name}" in documented, f"kafkalite.server.{name} is not in docs/reference"
