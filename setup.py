"""Build step: compile the protocol layer's per-request modules with mypyc, or install them as plain Python.

Everything else about the package is declared in `pyproject.toml`. The modules in `MODULES` below are type-checked
Python that mypyc turns into C extensions: the request frame reader, the request guard, the message codec and the
record-batch codec, which every request and every embedded record passes through. The Python source stays the
reference and the fallback:

- set `KAFKALITE_COMPILE=0` to install without compiling;
- when mypyc or a C compiler is missing, or compiling fails, the build says so on stderr and installs the plain
  Python modules; nothing else changes. Either way, what an earlier build left beside the sources is removed first,
  so an editable install never keeps running extensions it was asked not to build;
- the build records a digest of each compiled module's source beside the extensions, and `kafkalite.protocol.native`
  loads the extensions only while every source still matches (an edited module is never shadowed by a stale build).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = HERE / "src"


# The per-request modules of the protocol layer: what every served request and every embedded record passes through.
# Each is plain, fully annotated Python (mypy --strict); the build records which ones it compiled, and
# `kafkalite.protocol.native` reads that record at run time.
MODULES = (
    "kafkalite.protocol.wire",
    "kafkalite.protocol.request_guard",
    "kafkalite.protocol.messages",
    "kafkalite.protocol.records.batch",
    "kafkalite.protocol.records.codec",
)
GROUP = "kafkalite.protocol._native"
SHARED_LIB = f"{GROUP}__mypyc"  # the code of all five: kafkalite/protocol/_native__mypyc.*.so
DIGESTS = "_native.sources"  # beside it: "<module> <sha256 of its source>" per line


def _source(module: str) -> Path:
    return SOURCE_ROOT.joinpath(*module.split(".")).with_suffix(".py")


def _forget_build_in_place() -> None:
    """Remove the extensions and the record an earlier build wrote beside the sources (editable installs)."""
    for module in (*MODULES, SHARED_LIB):
        stem = SOURCE_ROOT.joinpath(*module.split("."))
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            stem.with_name(stem.name + suffix).unlink(missing_ok=True)
    _source(MODULES[0]).with_name(DIGESTS).unlink(missing_ok=True)


class BuildWithFallback(build_ext):
    """Builds the mypyc extensions; on any failure, removes them and leaves the pure-Python package."""

    def run(self) -> None:
        if not self.extensions:
            return
        record = Path(self.get_ext_fullpath(SHARED_LIB)).parent / DIGESTS
        record.unlink(missing_ok=True)  # written again only once every extension is built
        try:
            super().run()
        except Exception as error:  # a missing compiler or header surfaces as several distutils error types
            print(
                f"kafkalite: compiling {', '.join(MODULES)} failed ({error}); installing them as Python",
                file=sys.stderr,
            )
            for extension in self.extensions:
                Path(self.get_ext_fullpath(extension.name)).unlink(missing_ok=True)
            return
        record.write_text("".join(f"{m} {hashlib.sha256(_source(m).read_bytes()).hexdigest()}\n" for m in MODULES))


def _extensions() -> list[Any]:
    _forget_build_in_place()
    if os.environ.get("KAFKALITE_COMPILE", "1") == "0":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as error:
        print(f"kafkalite: mypyc is not available ({error}); installing the Python modules", file=sys.stderr)
        return []
    previous = Path.cwd()
    os.chdir(HERE)  # mypyc reads [tool.mypy] from pyproject.toml and writes its C files under build/
    try:
        paths = [str(_source(module).relative_to(HERE)) for module in MODULES]
        return list(mypycify(paths, opt_level="3", group_name=GROUP))
    except (Exception, SystemExit) as error:  # mypyc reports a type error with SystemExit
        print(
            f"kafkalite: mypyc could not translate {', '.join(MODULES)} ({error}); installing them as Python",
            file=sys.stderr,
        )
        return []
    finally:
        os.chdir(previous)


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildWithFallback})
