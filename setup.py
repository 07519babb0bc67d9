"""Build step: compile the per-request modules with mypyc, or install them as plain Python.

Everything else about the package is declared in `pyproject.toml`. The modules in `MODULES` below are type-checked
Python that mypyc turns into C extensions: the request frame reader, the request guard, the message codec, the
record-batch codec, the append path of the storage and broker layers, and the server's request path (the connection's
frame reading, dispatch, and the Produce and Fetch handlers), which every request and every embedded record passes
through. The Python source stays the reference and the fallback:

- set `KAFKALITE_COMPILE=0` to install without compiling;
- when mypyc or a C compiler is missing, or compiling fails, the build says so on stderr and installs the plain
  Python modules; nothing else changes;
- the build records a digest of each compiled module's source, taken before compiling, beside the extensions, and
  `kafkalite.protocol.native` loads the extensions only while every source still matches and the record is whole (an
  edited module is never shadowed by a stale build). The modules to compile are its `COMPILED_MODULES`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = HERE / "src"


def _native_module() -> Any:
    """`kafkalite.protocol.native`, loaded on its own (it needs only the standard library): its `COMPILED_MODULES` is
    the list to compile, and the run-time check reads the record this build writes."""
    spec = importlib.util.spec_from_file_location("_kafkalite_native", SOURCE_ROOT / "kafkalite/protocol/native.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("src/kafkalite/protocol/native.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NATIVE = _native_module()
MODULES: tuple[str, ...] = NATIVE.COMPILED_MODULES
GROUP = "kafkalite.protocol._native"
SHARED_LIB = f"{GROUP}__mypyc"  # the code of all of them: kafkalite/protocol/_native__mypyc.*.so
DIGESTS = NATIVE.DIGESTS_FILE  # beside it: "<module> <sha256 of its source>" per line


def _source(module: str) -> Path:
    return Path(NATIVE.source_path(module, str(SOURCE_ROOT)))


def _digests() -> str:
    """The record of what is compiled: taken before mypyc reads the sources, so an edit made during the build makes
    the record stale rather than the extensions."""
    return "".join(f"{m} {hashlib.sha256(_source(m).read_bytes()).hexdigest()}\n" for m in MODULES)


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
        record.write_text(RECORD)


def _extensions() -> list[Any]:
    if os.environ.get("KAFKALITE_COMPILE", "1") == "0":
        print("kafkalite: KAFKALITE_COMPILE=0: installing the compiled modules as Python", file=sys.stderr)
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
        # The modules they import are type-checked for their types but not reported on: the build environment holds
        # the build requirements only, and a module that imports what it lacks (the console's aiohttp, say) would
        # otherwise fail the build. `make typecheck` reports on every module, with everything installed.
        return list(mypycify(["--follow-imports=silent", *paths], opt_level="3", group_name=GROUP))
    except (Exception, SystemExit) as error:  # mypyc reports a type error with SystemExit
        print(
            f"kafkalite: mypyc could not translate {', '.join(MODULES)} ({error}); installing them as Python",
            file=sys.stderr,
        )
        return []
    finally:
        os.chdir(previous)


RECORD = _digests()
setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildWithFallback})
