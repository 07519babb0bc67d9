"""`kafkalite.groups` imports none of its modules until one of its names is used, and every name it exports is found."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kafkalite.groups

SCRIPT = """
import sys
import kafkalite.groups
print(sorted(m for m in sys.modules if m.startswith("kafkalite.groups.")))
from kafkalite.groups import StoredGroup
print(sorted(m for m in sys.modules if m.startswith("kafkalite.groups.")), StoredGroup.__module__)
"""


def test_importing_the_package_imports_none_of_its_modules_and_a_name_only_its_own() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == [
        "[]",
        "['kafkalite.groups.stored_group'] kafkalite.groups.stored_group",
    ]


@pytest.mark.parametrize("name", kafkalite.groups.__all__)
def test_every_exported_name_is_found_in_the_module_it_is_imported_from(name: str) -> None:
    value = getattr(kafkalite.groups, name)
    module = kafkalite.groups._MODULE_OF[name]
    assert value is getattr(sys.modules[f"kafkalite.groups.{module}"], name)


def test_the_table_of_modules_names_exactly_the_exported_names() -> None:
    assert sorted(kafkalite.groups._MODULE_OF) == sorted(kafkalite.groups.__all__)


def test_a_name_the_package_does_not_have_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = kafkalite.groups.Nothing  # type: ignore[attr-defined]
