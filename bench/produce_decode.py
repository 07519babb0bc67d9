"""What reading a Produce request costs the broker, with its records copied out (kio's reader) and left in the frame
(`protocol.produce_request`), by the size of its records fields and the number of partitions.

    .venv/bin/python -m bench.produce_decode [--sizes 16,64,128,256,1024] [--partitions 1,8] [--version 9]

Each request names one topic and `--partitions` partitions, each with a records field of the size (KiB). Times each
reader on the body in a loop (best of 5 repeats of 2,000 reads each, so the frame stays in the CPU's cache and the
copy is at its cheapest); prints one row per combination, and which reader `ApiSchema.decode` picks for it
(`protocol.produce_request.partition_budget`).
"""

from __future__ import annotations

import argparse
import datetime
import io
import sys
import timeit
from functools import partial
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer

from kafkalite.protocol import native
from kafkalite.protocol.produce_request import partition_budget, read_with_record_views


def _body(version: int, size: int, partitions: int) -> tuple[type[Any], bytes]:
    request_type = load_request_schema(0, version)
    module = sys.modules[request_type.__module__]
    data = tuple(module.PartitionProduceData(index=i, records=b"r" * size) for i in range(partitions))
    topic = module.TopicProduceData(name="t", partition_data=data)
    request = request_type(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=30), topic_data=(topic,))
    buffer = io.BytesIO()
    entity_writer(request_type)(buffer, request)
    return request_type, buffer.getvalue()


def _best_us(call: Any, number: int = 2_000) -> float:
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="16,64,128,256,1024", help="records sizes in KiB, comma-separated")
    parser.add_argument("--partitions", default="1,8", help="partition counts, comma-separated")
    parser.add_argument("--version", type=int, default=9, help="Produce version (3-12)")
    args = parser.parse_args()
    status = native.status()
    print(f"protocol layer: {'compiled' if status.compiled else 'Python'}; Produce v{args.version}")
    print("| partitions × records (KiB) | kio's reader, copied (µs) | left in the frame (µs) | decode uses |")
    print("|---|---:|---:|---|")
    for partitions in (int(p) for p in args.partitions.split(",")):
        for kib in (int(s) for s in args.sizes.split(",")):
            request_type, body = _body(args.version, kib * 1024, partitions)
            copied = _best_us(partial(entity_reader(request_type), body, 0))
            viewed = _best_us(partial(read_with_record_views, body, 0, request_type, partitions))
            picked = "views" if partitions <= partition_budget(len(body)) else "kio"
            print(f"| {partitions} × {kib:,} | {copied:.1f} | {viewed:.1f} | {picked} |")


if __name__ == "__main__":
    main()
