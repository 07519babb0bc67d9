"""Importing kio without its hypothesis hooks, for processes that start often (`kafkalite serve`, the pytest plugin).

kio registers a hypothesis strategy for each of its field types whenever hypothesis is importable, which it is
wherever KafkaLite sits next to its tests. That import costs about 0.3 s and 9 MB on an idle machine (seconds on a
loaded one) and is never used by a broker. Hidden for the one import of kio's field types, hypothesis stays
importable afterwards; when this process already imported either, nothing changes.
"""

from __future__ import annotations

import sys


def import_kio_without_hypothesis() -> None:
    if "hypothesis" in sys.modules or "kio" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # None in sys.modules: "import hypothesis" fails
    try:
        import kio.static._phantom  # noqa: F401
    finally:
        del sys.modules["hypothesis"]
