"""`python -m bench.security_bench`: SASL_SSL (SCRAM-SHA-512) against PLAINTEXT on one `kafkalite serve`, same run.

    python -m bench.security_bench                 # 3 rounds; prints a Markdown table and writes bench/results/*.json
    python -m bench.security_bench --rounds 1 --scale 0.2      # a smoke run
    python -m bench.security_bench --pin           # broker on CPU 1, client on CPU 0

One broker process (`kafkalite serve --fsync never`, file storage in a temporary directory, so plaintext Fetch
answers go out with sendfile and TLS ones are copied and encrypted) serves both listeners, so the only difference
between the two columns is the listener. Per round and per message size (100 B, 1 KiB), in turn on each listener:
produce N messages with confluent-kafka (acks=1, linger.ms=5, one producer) and time until every delivery report;
then read them all back with one consumer (assign, from offset 0) and time until the last one. Connection set-up:
a fresh client's first Metadata answer (ApiVersions, TLS handshake, SaslHandshake, two SCRAM round trips, Metadata)
timed `SETUP_REPEATS` times per listener. The CPU rows are the broker's and this client's (librdkafka's threads
included) CPU time over each produce window, as a share of one core: on a 2-core machine their sum says whether the
pair is CPU-bound, and `--pin` shows which side limits when each has a core of its own. Medians over rounds;
ratios are SASL_SSL ÷ PLAINTEXT. The test PKI and the SCRAM user are made in a temporary directory with the
`cryptography` package and `kafkalite users`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import confluent_kafka
import confluent_kafka.admin

from bench.machine import process_cpu_seconds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "security"))
from certs import make_pki

SIZES = (100, 1024)
MESSAGES = {100: 200_000, 1024: 100_000}
SETUP_REPEATS = 20
PASSWORD = "bench-secret"
RESULTS_DIR = Path("bench/results")


def _start(workdir: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    pki = make_pki(workdir / "pki")
    _, _, server_pem = pki.issue("localhost", server=True)
    data = workdir / "data"
    subprocess.run(
        [sys.executable, "-m", "kafkalite.cli", "users", "set", "bench", "--password-stdin", "--data-dir", str(data)],
        input=PASSWORD + "\n",
        text=True,
        check=True,
        capture_output=True,
    )
    config = workdir / "server.properties"
    config.write_text(
        "\n".join(
            [
                "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
                f"log.dirs={data}",
                f"ssl.keystore.location={server_pem}",
                "sasl.enabled.mechanisms=SCRAM-SHA-512",
                "",
            ]
        )
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkalite.cli", "serve", "--config", str(config), "--fsync", "never", "--no-http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.readline()  # the ready line
    listeners = {}
    for _ in range(2):
        _, _, name, _, address = process.stdout.readline().split()
        listeners[name] = address
    secured = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "bench",
        "sasl.password": PASSWORD,
        "ssl.ca.location": str(pki.ca_file),
    }
    configs = {
        "PLAINTEXT": json.dumps({"bootstrap.servers": listeners["PLAINTEXT"]}),
        "SASL_SSL": json.dumps({"bootstrap.servers": listeners["SASL_SSL"], **secured}),
    }
    return process, configs


def _produce(config: dict[str, Any], topic: str, size: int, count: int) -> float:
    producer = confluent_kafka.Producer(
        {**config, "acks": 1, "linger.ms": 5, "queue.buffering.max.messages": 1_000_000}
    )
    value = b"x" * size
    delivered = 0

    def on_delivery(error: Any, _message: Any) -> None:
        nonlocal delivered
        if error is None:
            delivered += 1

    began = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(300)
    elapsed = time.perf_counter() - began
    if delivered != count:
        raise RuntimeError(f"{delivered} of {count} delivered")
    return elapsed


def _consume(config: dict[str, Any], topic: str, count: int) -> float:
    consumer = confluent_kafka.Consumer(
        {**config, "group.id": f"bench-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    seen = 0
    began = time.perf_counter()
    while seen < count:
        # Never more than the messages still due: consume(n) waits its whole timeout for a batch that cannot fill,
        # which once added a second to every run and made PLAINTEXT look slower than SASL_SSL.
        for message in consumer.consume(min(10_000, count - seen), 1.0):
            if message.error() is None:
                seen += 1
    elapsed = time.perf_counter() - began
    consumer.close()
    return elapsed


def _pin(broker_pid: int) -> None:
    """Broker threads on CPU 1, this process (and the client threads it starts later) on CPU 0."""
    for thread in os.listdir(f"/proc/{broker_pid}/task"):
        os.sched_setaffinity(int(thread), {1})
    os.sched_setaffinity(0, {0})


def _setup(config: dict[str, Any]) -> float:
    began = time.perf_counter()
    admin = confluent_kafka.admin.AdminClient(config)
    admin.list_topics(timeout=30)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the message counts")
    parser.add_argument(
        "--pin", action="store_true", help="the broker on CPU 1, this client on CPU 0: which side is the limit"
    )
    args = parser.parse_args()
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="kl-security-bench-") as tmp:
        process, configs = _start(Path(tmp))
        if args.pin:
            _pin(process.pid)
        try:
            for rnd in range(args.rounds):
                for size in SIZES:
                    count = max(1000, int(MESSAGES[size] * args.scale))
                    for listener, text in configs.items():
                        config = json.loads(text)
                        topic = f"bench-{listener.lower()}-{size}-{rnd}"
                        broker_cpu, client_cpu = process_cpu_seconds(process.pid), time.process_time()
                        produce_s = _produce(config, topic, size, count)
                        broker_cpu = process_cpu_seconds(process.pid) - broker_cpu
                        client_cpu = time.process_time() - client_cpu
                        consume_s = _consume(config, topic, count)
                        rows.setdefault(f"produce {size} B {listener}", []).append(count / produce_s)
                        rows.setdefault(f"consume {size} B {listener}", []).append(count / consume_s)
                        rows.setdefault(f"produce {size} B {listener} broker CPU", []).append(broker_cpu / produce_s)
                        rows.setdefault(f"produce {size} B {listener} client CPU", []).append(client_cpu / produce_s)
                        print(
                            f"round {rnd} {size} B {listener}: produce {count / produce_s:,.0f}/s "
                            f"(CPU: broker {100 * broker_cpu / produce_s:.0f}%, client "
                            f"{100 * client_cpu / produce_s:.0f}%), consume {count / consume_s:,.0f}/s",
                            file=sys.stderr,
                            flush=True,
                        )
                for listener, text in configs.items():
                    for _ in range(SETUP_REPEATS):
                        rows.setdefault(f"setup {listener}", []).append(_setup(json.loads(text)) * 1000)
        finally:
            process.terminate()
            process.wait(30)
    medians = {name: statistics.median(values) for name, values in rows.items()}
    print("| workload | PLAINTEXT | SASL_SSL (SCRAM-SHA-512) | ratio |\n|---|---|---|---|")
    for kind in ("produce", "consume"):
        for size in SIZES:
            plain, secured = medians[f"{kind} {size} B PLAINTEXT"], medians[f"{kind} {size} B SASL_SSL"]
            print(f"| {kind} {size} B (msg/s) | {plain:,.0f} | {secured:,.0f} | {secured / plain:.2f}× |")
    plain, secured = medians["setup PLAINTEXT"], medians["setup SASL_SSL"]
    print(f"| connection set-up to first Metadata (ms) | {plain:.1f} | {secured:.1f} | {secured / plain:.1f}× |")
    for size in SIZES:
        for side in ("broker", "client"):
            plain = medians[f"produce {size} B PLAINTEXT {side} CPU"]
            secured = medians[f"produce {size} B SASL_SSL {side} CPU"]
            print(f"| produce {size} B: {side} CPU (% of a core) | {100 * plain:.0f} | {100 * secured:.0f} | |")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS_DIR / f"security-{stamp}.json"
    out.write_text(json.dumps({"rounds": args.rounds, "scale": args.scale, "samples": rows, "medians": medians}))
    print(f"\nraw samples: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
