"""Memory Metadata's shared partition entries hold after topics of many sizes were described, at every version.

    python bench/metadata_memory.py [--partitions 5000] [--baseline COMMIT]

Asks the Metadata handler's `_partitions` for topics of 1, 100, N-1 and N partitions (N = `--partitions`) at each of
the 14 Metadata versions, as an all-topics answer does, and reports the bytes traced (`tracemalloc`) that stay
allocated: what a broker keeps after such topics existed, whether or not they still do. With `--baseline COMMIT`,
the same in a subprocess on `src/kafkalite` as of that commit (`git archive`), so both figures come from one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import tracemalloc
from io import BytesIO
from pathlib import Path
from typing import cast

MIB = 1 << 20
VERSIONS = range(14)


def measure(partitions: int) -> float:
    """MiB the entries keep once topics of 1, 100, partitions-1 and partitions partitions were described."""
    from kafkalite.broker import Broker
    from kafkalite.protocol.messages import api_schema
    from kafkalite.protocol.wire import ApiKey, RequestHeader
    from kafkalite.server.dispatch import RequestContext, ServerInfo
    from kafkalite.server.handlers import metadata

    contexts = [
        RequestContext(
            cast(Broker, None),
            ServerInfo(0, "localhost", 9092),
            RequestHeader(ApiKey.METADATA, version, 1, "bench"),
            api_schema(ApiKey.METADATA, version),
        )
        for version in VERSIONS
    ]
    for ctx in contexts:  # load kio's classes before tracing, then start from an empty cache
        metadata._partitions(ctx, 1)
    cache = vars(metadata).get("_partition_entries", vars(metadata).get("_partition_lists"))
    assert isinstance(cache, dict), "no partition-entry cache in this metadata handler"
    cache.clear()
    tracemalloc.start()
    for ctx in contexts:
        for count in (1, partitions, partitions - 1, 100, partitions):
            metadata._partitions(ctx, count)
    kept = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return kept / MIB


def _baseline(commit: str, partitions: int) -> float:
    archive = subprocess.run(["git", "archive", commit, "src/kafkalite"], check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        script = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import metadata_memory as m; "
        script += f"print(m.measure({partitions}))"
        out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, env=env)
        return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=5000)
    parser.add_argument("--baseline", help="a commit to measure in the same run")
    args = parser.parse_args()
    if args.partitions < 2:
        parser.error("--partitions must be at least 2")
    print(f"this tree: {measure(args.partitions):.1f} MiB kept ({len(VERSIONS)} versions, up to {args.partitions})")
    if args.baseline:
        print(f"{args.baseline}: {_baseline(args.baseline, args.partitions):.1f} MiB kept")


if __name__ == "__main__":
    main()
