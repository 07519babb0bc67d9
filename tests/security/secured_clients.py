"""Each client library configured the usual Kafka way for SASL_SSL (SCRAM) or SSL with a client certificate, and
the steps every secured-client test runs with it: produce, consume in a group (commit), admin (create, list)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiokafka
import aiokafka.admin
import aiokafka.errors
import aiokafka.helpers
import confluent_kafka
import confluent_kafka.admin
import kafka
import kafka.admin
import kafka.errors
import pytest

WAIT_S = 30.0


@dataclass(frozen=True)
class Credentials:
    """How a client authenticates: SASL user/password (`mechanism`) and/or a client certificate."""

    protocol: str  # SASL_SSL, SASL_PLAINTEXT or SSL
    ca_file: Path | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    cert_file: Path | None = None
    key_file: Path | None = None


def confluent_config(bootstrap: str, c: Credentials) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "security.protocol": c.protocol}
    if c.ca_file:
        config["ssl.ca.location"] = str(c.ca_file)
    if c.mechanism:
        config |= {"sasl.mechanism": c.mechanism, "sasl.username": c.username, "sasl.password": c.password}
    if c.cert_file:
        config |= {"ssl.certificate.location": str(c.cert_file), "ssl.key.location": str(c.key_file)}
    return config


def kafka_python_config(bootstrap: str, c: Credentials) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap_servers": bootstrap, "security_protocol": c.protocol}
    if c.ca_file:
        config["ssl_cafile"] = str(c.ca_file)
    if c.mechanism:
        config |= {"sasl_mechanism": c.mechanism, "sasl_plain_username": c.username, "sasl_plain_password": c.password}
    if c.cert_file:
        config |= {"ssl_certfile": str(c.cert_file), "ssl_keyfile": str(c.key_file)}
    return config


def aiokafka_config(bootstrap: str, c: Credentials) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap_servers": bootstrap, "security_protocol": c.protocol}
    if c.ca_file:
        config["ssl_context"] = aiokafka.helpers.create_ssl_context(
            cafile=str(c.ca_file),
            certfile=str(c.cert_file) if c.cert_file else None,
            keyfile=str(c.key_file) if c.key_file else None,
        )
    if c.mechanism:
        config |= {"sasl_mechanism": c.mechanism, "sasl_plain_username": c.username, "sasl_plain_password": c.password}
    return config


def kcat_args(bootstrap: str, c: Credentials) -> list[str]:
    """`-X key=value` pairs: kcat takes librdkafka's settings, as confluent-kafka does."""
    pairs = [("-X", f"{k}={v}") for k, v in confluent_config(bootstrap, c).items() if k != "bootstrap.servers"]
    return [arg for pair in pairs for arg in pair]


def refusal_logged(logger_name: str, error: type[BaseException], call: Callable[[], object]) -> str:
    """The error `call` raises and what the client logged meanwhile."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        with pytest.raises(error) as refused:
            call()
    finally:
        logger.removeHandler(handler)
    return repr(refused.value) + "\n" + "\n".join(r.getMessage() for r in records)


class Confluent:
    name = "confluent-kafka"

    def __init__(self, bootstrap: str, credentials: Credentials) -> None:
        self.config = confluent_config(bootstrap, credentials)

    def produce(self, topic: str, values: Sequence[bytes]) -> None:
        producer = confluent_kafka.Producer({**self.config, "acks": "all"})
        errors: list[Any] = []
        for value in values:
            producer.produce(topic, value, on_delivery=lambda e, _m: errors.append(e))
        assert producer.flush(WAIT_S) == 0
        assert errors == [None] * len(values), errors

    def consume(self, topic: str, group: str, count: int) -> list[bytes]:
        consumer = confluent_kafka.Consumer(
            {**self.config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )
        consumer.subscribe([topic])
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + WAIT_S
            while len(got) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is None:
                    continue
                if message.error():
                    raise confluent_kafka.KafkaException(message.error())
                got.append(message.value())
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
        return got

    def create_topic(self, topic: str) -> None:
        admin = confluent_kafka.admin.AdminClient(self.config)
        admin.create_topics([confluent_kafka.admin.NewTopic(topic, 2)])[topic].result(WAIT_S)

    def topics(self) -> set[str]:
        admin = confluent_kafka.admin.AdminClient(self.config)
        return set(admin.list_topics(timeout=WAIT_S).topics)

    def refusal(self) -> str:
        """The error a client whose login is refused reports."""
        errors: list[Any] = []
        admin = confluent_kafka.admin.AdminClient({**self.config, "error_cb": errors.append})
        with contextlib.suppress(confluent_kafka.KafkaException):
            admin.list_topics(timeout=5)
        admin.poll(1)  # error_cb runs from poll
        assert errors, "no error reported"
        assert any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in errors), errors
        return str(errors[0])


class KafkaPython:
    name = "kafka-python"

    def __init__(self, bootstrap: str, credentials: Credentials) -> None:
        self.config = kafka_python_config(bootstrap, credentials)

    def produce(self, topic: str, values: Sequence[bytes]) -> None:
        producer = kafka.KafkaProducer(**self.config, acks="all")
        try:
            for future in [producer.send(topic, value) for value in values]:
                future.get(WAIT_S)
        finally:
            producer.close(WAIT_S)

    def consume(self, topic: str, group: str, count: int) -> list[bytes]:
        consumer = kafka.KafkaConsumer(
            topic, **self.config, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False
        )
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + WAIT_S
            while len(got) < count and time.monotonic() < deadline:
                # Each poll may take the rest of the time: kafka-python 3.0 never applies the assignment of a group
                # join that completes after a poll's timeout ran out (a short poll loses it on a loaded machine).
                for records in consumer.poll(max(1, int((deadline - time.monotonic()) * 1000))).values():
                    got.extend(r.value for r in records)
            consumer.commit()
        finally:
            consumer.close()
        return got

    def create_topic(self, topic: str) -> None:
        admin = kafka.admin.KafkaAdminClient(**self.config)
        try:
            admin.create_topics([kafka.admin.NewTopic(topic, 2, 1)])
        finally:
            admin.close()

    def topics(self) -> set[str]:
        admin = kafka.admin.KafkaAdminClient(**self.config)
        try:
            return set(admin.list_topics())
        finally:
            admin.close()

    def refusal(self) -> str:
        """kafka-python reports a refused login as "Unable to bootstrap"; the reason is in its log."""

        def connect() -> None:
            kafka.admin.KafkaAdminClient(**self.config, bootstrap_timeout_ms=5000).close()

        return refusal_logged("kafka", kafka.errors.KafkaError, connect)


class AioKafka:
    name = "aiokafka"

    def __init__(self, bootstrap: str, credentials: Credentials) -> None:
        self.bootstrap = bootstrap
        self.credentials = credentials

    def _config(self) -> dict[str, Any]:
        return aiokafka_config(self.bootstrap, self.credentials)  # an SSLContext per client: made on its loop

    def produce(self, topic: str, values: Sequence[bytes]) -> None:
        async def main() -> None:
            producer = aiokafka.AIOKafkaProducer(**self._config(), acks="all")
            await producer.start()
            try:
                for value in values:
                    await producer.send_and_wait(topic, value)
            finally:
                await producer.stop()

        asyncio.run(asyncio.wait_for(main(), WAIT_S))

    def consume(self, topic: str, group: str, count: int) -> list[bytes]:
        async def main() -> list[bytes]:
            consumer = aiokafka.AIOKafkaConsumer(
                topic, **self._config(), group_id=group, auto_offset_reset="earliest", enable_auto_commit=False
            )
            await consumer.start()
            got: list[bytes] = []
            try:
                while len(got) < count:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        got.extend(r.value for r in records if r.value is not None)
                await consumer.commit()
            finally:
                await consumer.stop()
            return got

        return asyncio.run(asyncio.wait_for(main(), WAIT_S))

    def _admin(self, call: Any) -> Any:
        async def main() -> Any:
            admin = aiokafka.admin.AIOKafkaAdminClient(**self._config())
            await admin.start()
            try:
                return await call(admin)
            finally:
                await admin.close()

        return asyncio.run(asyncio.wait_for(main(), WAIT_S))

    def create_topic(self, topic: str) -> None:
        self._admin(lambda admin: admin.create_topics([aiokafka.admin.NewTopic(topic, 2, 1)]))

    def topics(self) -> set[str]:
        return set(self._admin(lambda admin: admin.list_topics()))

    def refusal(self) -> str:
        """aiokafka, like kafka-python, fails to bootstrap and logs why."""
        return refusal_logged("aiokafka", aiokafka.errors.KafkaError, self.topics)


class Kcat:
    name = "kcat"

    def __init__(self, bootstrap: str, credentials: Credentials) -> None:
        self.bootstrap = bootstrap
        self.credentials = credentials

    def run(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        command = ["kcat", "-b", self.bootstrap, *kcat_args(self.bootstrap, self.credentials), *args]
        return subprocess.run(command, input=stdin, capture_output=True, timeout=WAIT_S * 2)

    def _ok(self, *args: str, stdin: bytes = b"") -> str:
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    def produce(self, topic: str, values: Sequence[bytes]) -> None:
        self._ok("-P", "-t", topic, "-X", "acks=all", stdin=b"\n".join(values) + b"\n")

    def consume(self, topic: str, group: str, count: int) -> list[bytes]:
        """A balanced-consumer (-G) run that stops after `count` messages and commits."""
        out = self._ok("-G", group, "-c", str(count), "-o", "beginning", "-f", "%s\n", topic)
        return [line.encode() for line in out.splitlines()]

    def create_topic(self, topic: str) -> None:
        self.produce(topic, [b"created"])  # kcat has no admin calls; auto-creation makes the topic

    def topics(self) -> set[str]:
        return set(re.findall(r'topic "([^"]+)"', self._ok("-L")))

    def refusal(self) -> str:
        done = self.run("-L", "-m", "5")
        assert done.returncode != 0
        return done.stderr.decode()


CLIENTS = (Confluent, KafkaPython, AioKafka, Kcat)


def new_group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"
