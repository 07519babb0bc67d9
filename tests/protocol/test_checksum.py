"""`kafkalite.protocol.checksum`: the crc32c package's native function, loaded without the package's `__init__`."""

from __future__ import annotations

import subprocess
import sys

import crc32c as package

from kafkalite.protocol.checksum import crc32c


def test_check_value_and_continuation_match_the_package() -> None:
    # RFC 3720 B.4: the CRC-32C of the ASCII digits "123456789" is 0xE3069283.
    assert crc32c(b"123456789") == package.crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283
    data = bytes(range(256)) * 1000
    assert crc32c(memoryview(data)[7:]) == package.crc32c(data[7:])
    assert crc32c(bytearray(data)) == package.crc32c(data)


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_a_fresh_process_loads_only_the_extension() -> None:
    code = (
        "import sys\n"
        "from kafkalite.protocol.checksum import crc32c\n"
        "print(crc32c(b'123456789'), 'crc32c' in sys.modules, 'importlib.metadata' in sys.modules)\n"
        "import crc32c as package\n"  # the ordinary import still works afterwards, and agrees
        "print(package.crc32c(b'123456789'))"
    )
    assert _fresh(code).split() == [str(0xE3069283), "False", "False", str(0xE3069283)]


def test_an_already_imported_package_is_used_as_it_is() -> None:
    code = "import crc32c as package\nfrom kafkalite.protocol.checksum import crc32c\nprint(crc32c is package.crc32c)"
    assert _fresh(code) == "True"
