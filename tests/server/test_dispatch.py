"""The handler registry against kio: every version a handler registers must exist there.

Registration loads no kio classes (that is lazy, for start-up time), so this is where a range typo such as
`versions=range(0, 14)` for an API kio knows up to v12 is caught.
"""

from __future__ import annotations

import pytest
from kio.index import KioIndexError

from kafkalite.protocol.messages import api_schema
from kafkalite.server import dispatch

REGISTERED = [(key, version) for key, lo, hi in dispatch.supported_ranges() for version in range(lo, hi + 1)]


def test_every_api_key_we_name_is_registered() -> None:
    assert len({key for key, _ in REGISTERED}) >= 20


@pytest.mark.parametrize(("api_key", "version"), REGISTERED)
def test_kio_has_every_registered_version(api_key: int, version: int) -> None:
    schema = api_schema(api_key, version)
    assert (schema.api_key, schema.version) == (api_key, version)


def test_a_version_kio_lacks_is_caught() -> None:
    """The check above can fail: one past the newest version of a registered API is not in kio."""
    api_key, _, newest = dispatch.supported_ranges()[0]
    with pytest.raises(KioIndexError):
        api_schema(api_key, newest + 1000)
