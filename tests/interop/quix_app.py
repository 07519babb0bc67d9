"""A stateful quixstreams application, run as its own process so a test can restart it or kill -9 it.

Reads JSON `{"n": int}` messages from `numbers` (keyed), keeps a running sum and count per key in the `default`
state store (so quixstreams keeps a compacted changelog topic for it), and writes `{"seq": int, "sum": int}` for
every input to `sums`, keyed as the input: for a key's i-th input, `seq` is i (1-based). It checkpoints every 20
inputs, so the changelog sees many updates of the same few keys. Runs until SIGTERM (a clean
stop: quixstreams flushes and commits) or SIGKILL. Python's output is unbuffered (`-u`), so a killed app's
log is whole.

    python quix_app.py BOOTSTRAP STATE_DIR GUARANTEE
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from quixstreams import Application, State


def add(value: dict[str, Any], state: State) -> dict[str, int]:
    seq = int(state.get("seq", 0)) + 1
    total = int(state.get("sum", 0)) + int(value["n"])
    state.set("seq", seq)
    state.set("sum", total)
    return {"seq": seq, "sum": total}


def main(bootstrap: str, state_dir: str, guarantee: str) -> None:
    app = Application(
        broker_address=bootstrap,
        consumer_group="summer",
        auto_offset_reset="earliest",
        processing_guarantee=guarantee,  # type: ignore[arg-type]
        state_dir=state_dir,
        commit_interval=0.5,
        commit_every=20,  # a checkpoint (and a changelog flush) every 20 inputs: many updates of few keys
        loglevel=logging.INFO,
        # A stable transactional id, as an exactly-once deployment has: a restarted app fences the one it replaces,
        # whose open transaction is then aborted at once (quixstreams' default is a new random id on every start,
        # leaving a killed app's transaction to block read_committed consumers until it times out).
        producer_extra_config={"transactional.id": "summer-app"} if guarantee == "exactly-once" else None,
        # A killed member keeps its partitions until its session times out (45 s by default, as in Kafka): the
        # restarted app waits that long for its first assignment. Six seconds is the broker's minimum.
        consumer_extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
    )
    numbers = app.topic("numbers", key_deserializer="str", value_deserializer="json")
    sums = app.topic("sums", key_serializer="str", value_serializer="json")
    app.dataframe(numbers).apply(add, stateful=True).to_topic(sums)
    app.run()


if __name__ == "__main__":
    main(*sys.argv[1:4])
