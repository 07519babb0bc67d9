"""CRC-32C (Castagnoli), the checksum of every RecordBatch v2, from the native module of the `crc32c` package.

Only the package's C extension (`crc32c._crc32c`) is needed. The package's `__init__` also asks
`importlib.metadata` for its own version, which imports the email parser, zipfile and csv and scans the metadata of
every installed distribution: about 13% of the instructions `kafkalite serve` spent starting up, for a version
string nothing reads. So the extension is loaded from the package's directory without running that `__init__`.

When the package is already imported, or its directory holds no `_crc32c` extension (a layout this loader does not
know), the ordinary `from crc32c import crc32c` runs instead, so a missing or broken installation fails exactly as
it would without this module. Loading the extension under its own name (`crc32c._crc32c`) keeps a later
`import crc32c` working: CPython hands the same extension module back.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from typing import Protocol


class Crc32c(Protocol):
    def __call__(self, data: bytes | bytearray | memoryview, value: int = 0, /) -> int: ...


def _load() -> Crc32c:
    if "crc32c" not in sys.modules:
        package = importlib.machinery.PathFinder.find_spec("crc32c")
        for directory in (package.submodule_search_locations or ()) if package is not None else ():
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(directory, "_crc32c" + suffix)
                if not os.path.isfile(path):
                    continue
                spec = importlib.util.spec_from_file_location("crc32c._crc32c", path)
                if spec is None or spec.loader is None:
                    continue
                native = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(native)
                function: Crc32c = native.crc32c
                return function
    from crc32c import crc32c

    return crc32c


crc32c: Crc32c = _load()
"""`crc32c(data, value=0)`: the CRC-32C of `data`, continuing from `value`."""
