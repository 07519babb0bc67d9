"""Compiled or pure Python: which form of the per-request modules this process runs.

The build (`setup.py`) compiles a few modules with mypyc: of this package, the frame reader, the request guard, the
message codec, the Produce request reader and answer writer, and the record-batch codec; of the storage and broker
layers, the append path; of the server layer, the request path (`COMPILED_MODULES`).
It writes the extensions beside the sources, and a list of the modules it compiled with a SHA-256 digest of each
one's source (`_native.sources`). Python's import system prefers an extension to a `.py` file of the same name, so
normally nothing needs doing. This module steps in when the extensions must not be used, and the package's
`__init__` calls `install()` before any of them is imported:

- `KAFKALITE_PURE_PYTHON=1` in the environment asks for the Python source (the test suite runs both forms);
- a source that no longer matches its digest was edited after the build: its extension is stale. The compiled
  modules call each other directly, so one stale module retires them all, and every listed module is then imported
  from its `.py` file until the next build (`make` rebuilds when a compiled source changes);
- extensions with no record beside them (a build that stopped half-way) are stale too, and a record whose
  extensions are missing (built for another interpreter) means Python.

With neither record nor extensions (the build compiled nothing: no C compiler, `KAFKALITE_COMPILE=0`), everything is
Python and there is nothing to decide.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NamedTuple

COMPILED_MODULES = (  # what setup.py compiles (it reads this tuple): every request and embedded record runs them
    "kafkalite.protocol.wire",
    "kafkalite.protocol.request_guard",
    "kafkalite.protocol.messages",
    "kafkalite.protocol.produce_request",
    "kafkalite.protocol.produce_response",
    "kafkalite.protocol.fetch_response",
    "kafkalite.protocol.records.batch",
    "kafkalite.protocol.records.codec",
    # The append path: every produced batch passes through these (the storage engines' base class and both engines,
    # the segment and its roll rule, the partition's checks). `kafkalite.storage` and `kafkalite.broker` import this
    # package before any of them, so `install()` has decided first.
    "kafkalite.storage.policy",
    "kafkalite.storage.transaction_index",  # its AbortedTxn: compiled code reads a named tuple's fields by position
    "kafkalite.storage.segment",
    "kafkalite.storage.segmented_log",
    "kafkalite.storage.partition_log",
    "kafkalite.storage.memory_log",
    "kafkalite.broker.fetch_data",  # FetchData: a named tuple the compiled Fetch handler reads by position
    "kafkalite.broker.partition",
    # The served request path: every request's frame, dispatch, the Produce and Fetch handlers, and a Fetch answer's
    # framing and sending (`zero_copy`). `kafkalite.server` imports `kafkalite.broker` (and so this package) before
    # any of them.
    "kafkalite.server.frame_stream",
    "kafkalite.server.dispatch",
    "kafkalite.server.handlers.produce",
    "kafkalite.server.handlers.fetch",
    "kafkalite.server.zero_copy",
)
PURE_ENV = "KAFKALITE_PURE_PYTHON"
DIGESTS_FILE = "_native.sources"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SOURCE_ROOT = os.path.dirname(os.path.dirname(_PACKAGE_DIR))  # the directory that holds `kafkalite/`


class NativeStatus(NamedTuple):
    """What the build compiled, and why it is not in use (`None`: it is)."""

    built: tuple[str, ...]
    not_used_because: str | None

    @property
    def compiled(self) -> bool:
        return bool(self.built) and self.not_used_because is None


def source_path(module: str, root: str = _SOURCE_ROOT) -> str:
    return os.path.join(root, *module.split(".")) + ".py"


def has_extension(module: str, root: str = _SOURCE_ROOT) -> bool:
    """Whether an extension this interpreter can import sits beside the module's source."""
    stem = os.path.join(root, *module.split("."))
    return any(os.path.isfile(stem + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def read_status(package_dir: str = _PACKAGE_DIR, environ: dict[str, str] | None = None) -> NativeStatus:
    """Decide from the build's record, the sources on disk and the environment; imports nothing."""
    environment = os.environ if environ is None else environ
    root = os.path.dirname(os.path.dirname(package_dir))
    try:
        with open(os.path.join(package_dir, DIGESTS_FILE), encoding="ascii") as record:
            entries = [line.split() for line in record if line.strip()]
    except FileNotFoundError:
        if any(has_extension(name, root) for name in COMPILED_MODULES):
            return NativeStatus(
                COMPILED_MODULES, "its extensions have no record of their sources (an unfinished build)"
            )
        return NativeStatus((), "the build compiled nothing")
    built = tuple(name for name, _digest in entries)
    if environment.get(PURE_ENV, "") not in ("", "0"):
        return NativeStatus(built, f"{PURE_ENV} is set")
    missing = [name for name in built if not has_extension(name, root)]
    if missing:
        return NativeStatus(built, f"{missing[0]} has no extension this interpreter can load")
    for name, digest in entries:
        try:
            with open(source_path(name, root), "rb") as source:
                current = hashlib.sha256(source.read()).hexdigest()
        except FileNotFoundError:
            continue  # installed without sources: the extension is all there is
        if current != digest:
            return NativeStatus(built, f"{name} was edited after it was compiled")
    return NativeStatus(built, None)


class _SourceFirst:
    """A meta path finder that imports the listed modules from their `.py` files, ahead of the extension beside them.
    (Not an `importlib.abc.MetaPathFinder` subclass: importing `importlib.abc` costs `kafkalite serve` 6 ms of
    start-up, for a base class the import system does not need.)"""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = frozenset(modules)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        leaf = fullname.rpartition(".")[2] + ".py"
        for directory in path or ():
            candidate = os.path.join(directory, leaf)
            if os.path.isfile(candidate):
                return importlib.util.spec_from_file_location(fullname, candidate)
        return None


_status: NativeStatus | None = None


def install() -> NativeStatus:
    """Make the imports follow `read_status()`; once per process (later calls return the first decision)."""
    global _status
    if _status is None:
        _status = read_status()
        if _status.built and not _status.compiled:
            sys.meta_path.insert(0, _SourceFirst(_status.built))
    return _status


def status() -> NativeStatus:
    """The decision `install()` made for this process."""
    return install()
