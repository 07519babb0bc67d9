"""The compiled (mypyc) and the pure-Python forms of the protocol layer: which one a process runs, and why.

`setup.py` compiles a few protocol modules and records their sources' digests; `kafkalite.protocol.native` loads the
extensions only while every digest matches and `KAFKALITE_PURE_PYTHON` is not set. The rest of the suite runs
whichever form the build produced (`make test` then runs the protocol and server tests again in the pure form); these
tests check the decision itself, on real files and in fresh interpreters.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite.protocol import native

MODULES = ("kafkalite.protocol.wire", "kafkalite.protocol.records.batch")


def _layout(root: Path, edited: str | None = None, record: bool = True, extensions: bool = True) -> Path:
    """A package tree with two 'compiled' modules (an extension file beside each source) and the build's record."""
    package_dir = root / "kafkalite" / "protocol"
    lines = []
    for module in MODULES:
        path = Path(native.source_path(module, str(root)))
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"NAME = {module!r}\n".encode()
        path.write_bytes(text)
        lines.append(f"{module} {hashlib.sha256(text).hexdigest()}\n")
        if module == edited:
            path.write_bytes(text + b"# edited\n")
        if extensions:
            path.with_suffix(importlib.machinery.EXTENSION_SUFFIXES[0]).write_bytes(b"")
    if record:
        (package_dir / native.DIGESTS_FILE).write_text("".join(lines), encoding="ascii")
    return package_dir


def test_no_record_means_the_build_compiled_nothing(tmp_path: Path) -> None:
    status = native.read_status(str(tmp_path), environ={})
    assert status == native.NativeStatus((), "the build compiled nothing")
    assert not status.compiled


def test_matching_sources_use_the_extensions(tmp_path: Path) -> None:
    status = native.read_status(str(_layout(tmp_path)), environ={})
    assert status.built == MODULES
    assert status.compiled


def test_one_edited_source_retires_every_extension(tmp_path: Path) -> None:
    status = native.read_status(str(_layout(tmp_path, edited="kafkalite.protocol.records.batch")), environ={})
    assert status.built == MODULES
    assert status.not_used_because == "kafkalite.protocol.records.batch was edited after it was compiled"
    assert not status.compiled


def test_extensions_without_a_record_are_an_unfinished_build_and_not_used(tmp_path: Path) -> None:
    status = native.read_status(str(_layout(tmp_path, record=False)), environ={})
    assert status.built == native.COMPILED_MODULES  # every module the build may have compiled goes back to Python
    assert status.not_used_because == "its extensions have no record of their sources (an unfinished build)"


def test_a_record_without_extensions_for_this_interpreter_means_python(tmp_path: Path) -> None:
    status = native.read_status(str(_layout(tmp_path, extensions=False)), environ={})
    assert status.not_used_because == "kafkalite.protocol.wire has no extension this interpreter can load"
    assert not status.compiled


@pytest.mark.parametrize(("value", "compiled"), [("1", False), ("yes", False), ("0", True), ("", True)])
def test_the_environment_asks_for_the_python_source(tmp_path: Path, value: str, compiled: bool) -> None:
    status = native.read_status(str(_layout(tmp_path)), environ={native.PURE_ENV: value})
    assert status.compiled is compiled
    assert status.not_used_because == (None if compiled else f"{native.PURE_ENV} is set")


def test_an_installation_without_sources_keeps_the_extensions(tmp_path: Path) -> None:
    package_dir = _layout(tmp_path)
    Path(native.source_path(MODULES[0], str(tmp_path))).unlink()
    assert native.read_status(str(package_dir), environ={}).compiled


_REPORT = """
import importlib, json, sys
import kafkalite.broker.partition, kafkalite.storage.policy  # before native: the packages must decide on their own
from kafkalite.protocol import native
status = native.status()
files = {name: importlib.import_module(name).__file__ for name in status.built}
print(json.dumps({"built": status.built, "compiled": status.compiled, "files": files}))
"""


def _report(**environment: str) -> dict[str, object]:
    env = {key: value for key, value in os.environ.items() if key != native.PURE_ENV} | environment
    done = subprocess.run([sys.executable, "-c", _REPORT], env=env, capture_output=True, text=True, check=True)
    report: dict[str, object] = json.loads(done.stdout)
    return report


def _is_extension(path: str) -> bool:
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_a_fresh_interpreter_imports_what_the_decision_says() -> None:
    compiled = _report()
    files = compiled["files"]
    assert isinstance(files, dict)
    if compiled["compiled"]:
        assert sorted(files) == sorted(native.COMPILED_MODULES)
        assert all(_is_extension(path) for path in files.values()), files
    pure = _report(**{native.PURE_ENV: "1"})
    assert pure["compiled"] is False
    pure_files = pure["files"]
    assert isinstance(pure_files, dict)
    assert pure_files.keys() == files.keys()
    assert all(path.endswith(".py") for path in pure_files.values()), pure_files


@pytest.mark.skipif(os.environ.get("KAFKALITE_REQUIRE_COMPILED") != "1", reason="set by .ci/run, where gcc is present")
def test_ci_runs_the_compiled_form() -> None:
    """CI builds with a C compiler, so the suite there must have run the extensions, all of them."""
    report = _report()
    assert report["compiled"] is True, native.read_status()
    assert sorted(report["built"]) == sorted(native.COMPILED_MODULES)  # type: ignore[call-overload]


@pytest.mark.skipif(not native.status().built, reason="this installation compiled nothing (no C compiler)")
def test_an_edited_source_is_imported_instead_of_its_stale_extension(tmp_path: Path) -> None:
    """End to end: a copy of the built package, one source edited, imported by a fresh interpreter."""
    package = Path(native.__file__).parent.parent
    shutil.copytree(package, tmp_path / "kafkalite", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "kafkalite" / "protocol" / "records" / "codec.py", "a") as source:
        source.write("\nEDITED = True\n")
    report = _report(PYTHONPATH=str(tmp_path))
    files = report["files"]
    assert isinstance(files, dict)
    assert report["compiled"] is False
    assert all(path.startswith(str(tmp_path)) and path.endswith(".py") for path in files.values()), files


def test_make_rebuilds_when_any_compiled_source_changes() -> None:
    """The Makefile's install stamps depend on `BUILD_INPUTS`: a compiled module outside it would be edited, found
    stale by `native`, and run as Python until something else triggered a build."""
    root = Path(__file__).resolve().parents[2]
    makefile = (root / "Makefile").read_text().replace("\\\n", " ")
    line = next(line for line in makefile.splitlines() if line.startswith("BUILD_INPUTS :="))
    patterns = line.split("$(wildcard", 1)[1].rsplit(")", 1)[0].split()
    inputs = {path.resolve() for pattern in patterns for path in root.glob(pattern)}
    sources = {Path(native.source_path(name, str(root / "src"))).resolve() for name in native.COMPILED_MODULES}
    assert sources <= inputs, f"compiled modules missing from the Makefile's BUILD_INPUTS: {sorted(sources - inputs)}"


def _final_literals(path: Path) -> set[str]:
    """The module-level names of a source annotated `Final` and bound to a literal (mypyc copies those)."""
    tree = ast.parse(path.read_text())
    return {
        node.target.id
        for node in tree.body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and "Final" in ast.unparse(node.annotation)
        and node.value is not None
        and isinstance(node.value, ast.Constant | ast.UnaryOp)
    }


def test_no_compiled_module_copies_a_constant_of_an_interpreted_one() -> None:
    """mypyc writes a `Final` literal imported from an interpreted module into the importer's build; that module is
    not in the digest record, so an edit of the constant would run beside a build still holding the old value."""
    src = Path(__file__).resolve().parents[2] / "src"
    found: list[str] = []
    for name in native.COMPILED_MODULES:
        for node in ast.walk(ast.parse(Path(native.source_path(name, str(src))).read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("kafkalite"):
                continue
            if node.module in native.COMPILED_MODULES:
                continue
            source = src / (node.module or "").replace(".", "/")
            path = source.with_suffix(".py") if source.with_suffix(".py").exists() else source / "__init__.py"
            copied = _final_literals(path) & {alias.name for alias in node.names}
            if copied:
                found.append(f"{name} imports {sorted(copied)} from {node.module}")
    assert not found, found


def test_no_compiled_module_tests_isinstance_against_a_union() -> None:
    """`isinstance(x, A | B)` in a compiled module builds the union `A | B` on every call (two `type.__or__` calls and
    an object); a tuple of classes is checked class by class in C. The Python form behaves the same either way."""
    src = Path(__file__).resolve().parents[2] / "src"
    found: list[str] = []
    for name in native.COMPILED_MODULES:
        path = Path(native.source_path(name, str(src)))
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2
                and isinstance(node.args[1], ast.BinOp)
                and isinstance(node.args[1].op, ast.BitOr)
            ):
                found.append(f"{path.relative_to(src)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found
