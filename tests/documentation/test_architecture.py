"""`docs/architecture.md` names every module of the package, each in its package's table, so the guide cannot
silently fall behind the code: a new module without its one line there fails this test."""

from __future__ import annotations

import re
from pathlib import Path

from .hooks import DOCS, ROOT

PACKAGE = ROOT / "src" / "kafkalite"
_SECTION = re.compile(r"^\*\*`([\w/]+)`\*\*")
_FIRST_CELL = re.compile(r"^\| (`[^|]+`) \|")  # "| `a.py` |" or "| `a.py` · `b.py` |"
HANDLER_ROW = "handlers/<api>.py"  # one row stands for every handler module (one per API key)


def documented_modules() -> dict[str, set[str]]:
    """package ("kafkalite" for the top level) -> the module names its table lists."""
    sections: dict[str, set[str]] = {}
    current: str | None = None
    for line in (DOCS / "architecture.md").read_text(encoding="utf-8").splitlines():
        section = _SECTION.match(line)
        if section:
            current = section[1].rstrip("/")
            sections[current] = set()
        elif current is not None and (row := _FIRST_CELL.match(line)):
            sections[current].update(re.findall(r"`([^`]+)`", row[1]))
        elif line.startswith("#"):
            current = None
    return sections


def _is_documented(module: Path, sections: dict[str, set[str]]) -> bool:
    parts = module.relative_to(PACKAGE).parts
    package, name = ("kafkalite", parts[0]) if len(parts) == 1 else (parts[0], "/".join(parts[1:]))
    names = sections.get(package, set())
    if name in names:
        return True
    if name == "__init__.py" and package != "kafkalite":
        return package in sections  # a subpackage's __init__ is its section
    if name.endswith("/__init__.py"):
        return name.removesuffix("__init__.py") in names
    if name.startswith("handlers/"):
        return not Path(name).name.startswith("_") and HANDLER_ROW in names
    return False


def test_every_module_has_its_line_in_the_architecture_guide() -> None:
    sections = documented_modules()
    assert sections, "docs/architecture.md has no module tables"
    missing = [str(m.relative_to(PACKAGE)) for m in sorted(PACKAGE.rglob("*.py")) if not _is_documented(m, sections)]
    assert not missing, f"modules without their one line in docs/architecture.md's module lists: {missing}"


def test_the_guide_names_no_module_that_does_not_exist() -> None:
    for package, names in documented_modules().items():
        base = PACKAGE if package == "kafkalite" else PACKAGE / package
        for name in names - {HANDLER_ROW}:
            assert (base / name).exists(), f"docs/architecture.md lists {package}/{name}, which does not exist"
