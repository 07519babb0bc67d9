"""Load for profiling a running broker: one confluent-kafka producer with the settings of `python -m bench`'s produce
rows, sending to a broker you started yourself (so that `perf record -p` or `py-spy` can watch its process).

    .venv/bin/python -m bench.produce_load localhost:9092 TOPIC [--records 1000000] [--size 1024]
                                           [--partitions 1] [--acks 1]

The topic must exist with at least `--partitions` partitions. Prints the throughput when every record is
acknowledged.
"""

from __future__ import annotations

import argparse
import time

from confluent_kafka import Producer

from bench.brokers import QUIET


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="1")
    args = parser.parse_args()
    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": args.acks, "linger.ms": 5, **QUIET})
    payload = b"x" * args.size
    began = time.perf_counter()
    for n in range(args.records):
        while True:
            try:
                producer.produce(args.topic, payload, partition=n % args.partitions)
                break
            except BufferError:  # the client's queue is full: let it drain
                producer.poll(0.005)
        if n % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(60)
    seconds = time.perf_counter() - began
    sent = args.records - left
    rate = sent / seconds
    print(f"{sent:,} records in {seconds:.2f} s: {rate:,.0f} msg/s, {rate * args.size / 1e6:,.0f} MB/s")


if __name__ == "__main__":
    main()
