"""A stateful faust application (faust-streaming), run as its own process so a test can restart it or kill -9 it.

The same job as `quix_app.py`: reads JSON `{"n": int}` messages from `numbers` (keyed), keeps a running count and sum
per key in the table `totals` (so faust keeps the compacted changelog topic `summer-totals-changelog`), and writes
`{"seq": int, "sum": int, "n": int}` for every input to `sums`, keyed as the input: for a key's i-th input, `seq` is
i (1-based), and `n` is the input's own value (so a test can tell which inputs were counted). The table lives in
memory, so every start restores it from the changelog alone. Runs until SIGTERM (a clean stop: faust commits) or
SIGKILL.

    python faust_app.py BOOTSTRAP STATE_DIR GUARANTEE      (GUARANTEE: at-least-once or exactly-once)
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import faust


def make_app(bootstrap: str, state_dir: str, guarantee: str) -> faust.App:
    app = faust.App(
        "summer",
        broker=f"kafka://{bootstrap}",
        store="memory://",
        datadir=state_dir,
        processing_guarantee=guarantee.replace("-", "_"),
        topic_partitions=1,
        web_enabled=False,
        # A killed member keeps its partitions until its session times out: the restarted app waits that long for
        # its first assignment. Six seconds is the broker's minimum.
        broker_session_timeout=6.0,
        broker_heartbeat_interval=1.0,
        broker_commit_every=20,  # a commit every 20 inputs: many updates of few keys in the changelog
        broker_commit_interval=0.5,
        consumer_auto_offset_reset="earliest",
    )
    numbers = app.topic("numbers", key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
    sums = app.topic("sums", key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
    # The table's values are dicts in JSON, faust's default value serializer (a value_type would want a faust.Record).
    totals = app.Table("totals", default=lambda: {"seq": 0, "sum": 0}, partitions=1, key_type=str)

    @app.agent(numbers)
    async def add(stream: AsyncIterator[Any]) -> None:
        async for event in stream.events():  # type: ignore[attr-defined]
            key = event.key.decode()
            previous = totals[key]
            n = json.loads(event.value)["n"]
            current = {"seq": previous["seq"] + 1, "sum": previous["sum"] + n}
            totals[key] = current
            await sums.send(key=event.key, value=json.dumps({**current, "n": n}).encode())

    return app


if __name__ == "__main__":
    summer = make_app(*sys.argv[1:4])
    sys.argv = [sys.argv[0], "worker", "--loglevel", "info", "--without-web"]
    summer.main()
