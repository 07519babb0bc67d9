"""The fuzzer on secured listeners: hostile input before and during SASL authentication, and TLS garbage.

A `kafkalite serve --config` child with a SASL_PLAINTEXT listener (SCRAM-SHA-256/512 and PLAIN, one user) and an SSL
listener. Each frame of a session is one of:

- a mutated request of any advertised (api_key, version) sent before authentication (`frames.mutated_frame`): only
  ApiVersions, SaslHandshake and SaslAuthenticate may be answered, everything else must close the connection;
- a SaslHandshake (v0 or v1, with a real or hostile mechanism name) followed by hostile tokens: a mutated SCRAM
  client-first (odd names, nonces, extensions, channel-binding flags), random bytes, or a real client-first and a
  mutated client-final; in the v0 framing these go raw, in v1 inside SaslAuthenticate;
- TLS garbage on the SSL listener: random bytes, a ClientHello header with a hostile length, an HTTP request, or a
  truncated real ClientHello.

Meanwhile a prober logs in with SCRAM-SHA-512 and asks for Metadata, and another completes a TLS handshake and an
ApiVersions, each within a bound. Findings: an answer that does not decode or answers what must be refused, a slow
prober, a traceback in the broker's log, the broker exiting, memory growth (checked by the caller).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import scramp

from bench.fuzz.frames import Frame, encode_request, mutated_frame, request_class
from bench.fuzz.session import Tally, decode_answer
from bench.fuzz.target import START_TIMEOUT_S, Target
from kafkalite.protocol.messages import build

USER, PASSWORD = "fuzz", "fuzz-secret"
PRE_AUTH_APIS = frozenset((17, 18, 36))  # SaslHandshake, ApiVersions, SaslAuthenticate
SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS, METADATA = 17, 36, 18, 3


class SecuredTarget(Target):
    """A broker with a SASL_PLAINTEXT listener (`port`) and an SSL listener (`tls_port`, CA in `ca_file`)."""

    def __init__(self, process: subprocess.Popen[str], port: int, tls_port: int, ca_file: Path, log: Path) -> None:
        super().__init__(process, port, log)
        self.tls_port = tls_port
        self.ca_file = ca_file


@contextlib.contextmanager
def served_secured_broker(log_path: Path) -> Iterator[SecuredTarget]:
    """`kafkalite serve --config` with SASL_PLAINTEXT and SSL listeners on free ports; stopped when done."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "security"))
    from certs import make_pki  # the tests' PKI recipe (the `cryptography` package)

    with tempfile.TemporaryDirectory(prefix="kl-fuzz-secured-") as scratch:
        work = Path(scratch)
        pki = make_pki(work / "pki")
        _, _, server_pem = pki.issue("localhost", server=True)
        cli = [sys.executable, "-m", "kafkalite"]
        data = str(work / "data")
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"):
            user = [*cli, "users", "set", USER, "--mechanism", mechanism, "--password-stdin", "--data-dir", data]
            subprocess.run(user, input=PASSWORD + "\n", text=True, check=True, capture_output=True)
        config = work / "server.properties"
        config.write_text(
            f"listeners=SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0\nlog.dirs={work / 'data'}\n"
            f"ssl.keystore.location={server_pem}\nconnection.failed.authentication.delay.ms=0\n"
            "sasl.server.max.receive.size=65536\n"
        )
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [*cli, "serve", "--config", str(config), "--fsync", "never", "--no-http"],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        try:
            ports = _listener_ports(process)
            yield SecuredTarget(process, ports["SASL_PLAINTEXT"], ports["SSL"], pki.ca_file, log_path)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)


def _listener_ports(process: subprocess.Popen[str]) -> dict[str, int]:
    ports: dict[str, int] = {}
    done = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:  # keep draining, so the child never blocks on a full pipe
            if line.startswith("KafkaLite listener "):
                _, _, name, _, address = line.split()
                ports[name] = int(address.rsplit(":", 1)[1])
                if len(ports) == 2:
                    done.set()

    threading.Thread(target=read, daemon=True).start()
    if not done.wait(START_TIMEOUT_S):
        process.kill()
        raise RuntimeError("kafkalite serve --config did not report its listeners")
    return ports


async def _call(writer: asyncio.StreamWriter, reader: asyncio.StreamReader, data: bytes, timeout: float) -> bytes:
    writer.write(data)
    await writer.drain()
    (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), timeout))
    return await asyncio.wait_for(reader.readexactly(size), timeout)


def _request(api_key: int, version: int, correlation_id: int, **fields: Any) -> Frame:
    request = build(request_class(api_key, version), fields)
    return Frame(encode_request(api_key, version, correlation_id, request), api_key, version, correlation_id, "sasl")


def _hostile_scram_first(rng: random.Random) -> bytes:
    user = rng.choice(["fuzz", "", "=2C", "a,b", "\u0000", "x" * 5000, "fuzz=3D"])
    nonce = rng.choice(["abc", "", "a,b", "\x7f" * 10, "r" * 70000])
    header = rng.choice(["n,,", "y,,", "p=tls-unique,,", "n,a=other,", "", "q,,"])
    extra = rng.choice(["", ",tokenauth=true", ",m=ext", ",,,,", ",r=twice"])
    return f"{header}n={user},r={nonce}{extra}".encode(errors="surrogatepass")


def _hostile_token(rng: random.Random, mechanism: str) -> bytes:
    choice = rng.randrange(4)
    if choice == 0:
        return _hostile_scram_first(rng)
    if choice == 1:
        return rng.randbytes(rng.randrange(0, 600))
    if choice == 2:
        return b"\0" * rng.randrange(0, 5) + b"fuzz\0" + rng.randbytes(rng.randrange(0, 40))
    client = scramp.ScramClient([mechanism if mechanism.startswith("SCRAM") else "SCRAM-SHA-256"], USER, "wrong")
    return client.get_client_first().encode()


class SecuredFuzzSession:
    """One stream of hostile connections, one at a time; several run side by side on one `Tally` (`fuzz_secured`),
    and the one with `probes` also runs the two probers."""

    def __init__(
        self,
        target: SecuredTarget,
        pairs: list[tuple[int, int]],
        *,
        seed: int,
        probe_bound_s: float = 5.0,
        tally: Tally | None = None,
        probes: bool = True,
    ) -> None:
        self.target = target
        self.pairs = pairs
        self.rng = random.Random(seed)
        self.probe_bound_s = probe_bound_s
        self.tally = tally if tally is not None else Tally()
        self.probes = probes
        self._correlation = 0
        self._tls_client = ssl.create_default_context(cafile=str(target.ca_file))

    def _next_id(self) -> int:
        self._correlation = self._correlation % 0x7FFFFFFF + 1
        return self._correlation

    async def run(self, frames: int) -> Tally:
        stop = asyncio.Event()
        probers = (
            [asyncio.create_task(self._probe_sasl(stop)), asyncio.create_task(self._probe_tls(stop))]
            if self.probes
            else []
        )
        for _ in range(frames):
            self.tally.frames += 1
            kind = self.rng.choice(("pre-auth frame", "sasl exchange", "tls garbage"))
            self.tally.mutations[kind] += 1
            try:
                await asyncio.wait_for(self._one(kind), 15)
            except TimeoutError:
                self.tally.findings.append(f"{kind}: neither answered nor closed within 15 s")
        stop.set()
        await asyncio.gather(*probers)
        return self.tally

    async def _one(self, kind: str) -> None:
        if kind == "tls garbage":
            await self._tls_garbage()
            return
        reader, writer = await asyncio.open_connection("127.0.0.1", self.target.port)
        try:
            if kind == "pre-auth frame":
                await self._pre_auth_frame(reader, writer)
            else:
                await self._sasl_exchange(reader, writer)
        except (EOFError, ConnectionError, asyncio.IncompleteReadError):
            self.tally.closed += 1
        except TimeoutError:
            self.tally.unanswered += 1
        finally:
            writer.close()

    async def _pre_auth_frame(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        api_key, version = self.rng.choice(self.pairs)
        frame = mutated_frame(api_key, version, self._next_id(), self.rng)
        answer = await _call(writer, reader, frame.data, 2.0)
        self.tally.answered += 1
        if api_key not in PRE_AUTH_APIS:
            self.tally.findings.append(f"api {api_key} v{version} answered before authentication ({frame.mutation})")
        elif (wrong := decode_answer(frame, answer)) is not None:
            self.tally.findings.append(f"api {api_key} v{version} before authentication ({frame.mutation}): {wrong}")

    async def _sasl_exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        legacy = self.rng.random() < 0.3
        mechanism = self.rng.choice(["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN", "GSSAPI", "", "x" * 300])
        handshake = _request(SASL_HANDSHAKE, 0 if legacy else 1, self._next_id(), mechanism=mechanism)
        answer = await _call(writer, reader, handshake.data, 2.0)
        if (wrong := decode_answer(handshake, answer)) is not None:
            self.tally.findings.append(f"SaslHandshake {mechanism!r}: {wrong}")
        for _ in range(self.rng.randrange(1, 4)):
            token = _hostile_token(self.rng, mechanism)
            if legacy:
                writer.write(struct.pack(">i", len(token)) + token)
                await writer.drain()
                (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 2.0))
                await asyncio.wait_for(reader.readexactly(size), 2.0)
            else:
                version = self.rng.randrange(0, 3)
                frame = _request(SASL_AUTHENTICATE, version, self._next_id(), auth_bytes=token)
                answer = await _call(writer, reader, frame.data, 2.0)
                if (wrong := decode_answer(frame, answer)) is not None:
                    self.tally.findings.append(f"SaslAuthenticate: {wrong}")
            self.tally.answered += 1

    async def _tls_garbage(self) -> None:
        garbage = self.rng.choice(
            [
                self.rng.randbytes(self.rng.randrange(1, 2000)),
                b"\x16\x03\x01" + struct.pack(">H", self.rng.choice([0, 1, 0xFFFF])) + self.rng.randbytes(50),
                b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + self.rng.randbytes(self.rng.randrange(0, 100)),
            ]
        )
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.target.tls_port)
        except OSError as e:
            self.tally.findings.append(f"TLS listener refused a connection ({e})")
            return
        try:
            writer.write(garbage)
            writer.write_eof()  # the garbage is all there is: the server must not wait for its handshake timeout
            await writer.drain()
            with contextlib.suppress(TimeoutError):
                while await asyncio.wait_for(reader.read(4096), 12):
                    pass
            self.tally.closed += 1
        except (ConnectionError, OSError):
            self.tally.closed += 1
        finally:
            writer.close()

    async def _probe_sasl(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            began = time.perf_counter()
            try:
                await asyncio.wait_for(self._login_and_metadata(), self.probe_bound_s)
            except (TimeoutError, OSError, EOFError, asyncio.IncompleteReadError, AssertionError) as e:
                self.tally.findings.append(f"SCRAM probe failed ({type(e).__name__}: {e})")
            self.tally.probes += 1
            self.tally.slowest_probe_s = max(self.tally.slowest_probe_s, time.perf_counter() - began)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)

    async def _login_and_metadata(self) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.target.port)
        try:
            handshake = _request(SASL_HANDSHAKE, 1, self._next_id(), mechanism="SCRAM-SHA-512")
            await _call(writer, reader, handshake.data, self.probe_bound_s)
            client = scramp.ScramClient(["SCRAM-SHA-512"], USER, PASSWORD)
            for message in (client.get_client_first, client.get_client_final):
                frame = _request(SASL_AUTHENTICATE, 2, self._next_id(), auth_bytes=message().encode())
                answer = await _call(writer, reader, frame.data, self.probe_bound_s)
                response = _decoded(frame, answer)
                assert response.error_code == 0, f"login refused: {response.error_message}"
                if message == client.get_client_first:
                    client.set_server_first(response.auth_bytes.decode())
            metadata = _request(
                METADATA,
                12,
                self._next_id(),
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
            answer = await _call(writer, reader, metadata.data, self.probe_bound_s)
            assert decode_answer(metadata, answer) is None
        finally:
            writer.close()

    async def _probe_tls(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            began = time.perf_counter()
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(
                        "127.0.0.1", self.target.tls_port, ssl=self._tls_client, server_hostname="localhost"
                    ),
                    self.probe_bound_s,
                )
                frame = _request(
                    API_VERSIONS, 3, self._next_id(), client_software_name="p", client_software_version="1"
                )
                answer = await _call(writer, reader, frame.data, self.probe_bound_s)
                writer.close()
                if (wrong := decode_answer(frame, answer)) is not None:
                    self.tally.findings.append(f"TLS probe: {wrong}")
            except (TimeoutError, OSError, EOFError, asyncio.IncompleteReadError) as e:
                self.tally.findings.append(f"TLS probe failed ({type(e).__name__}: {e})")
            self.tally.probes += 1
            self.tally.slowest_probe_s = max(self.tally.slowest_probe_s, time.perf_counter() - began)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)


def _decoded(frame: Frame, answer: bytes) -> Any:
    from kio.index import load_response_schema
    from kio.serial import entity_reader

    response_type = load_response_schema(frame.api_key, frame.version)
    response, _ = entity_reader(response_type)(answer, 4 + response_type.__header_schema__.__version__)
    return response


async def _sessions(
    target: SecuredTarget, pairs: list[tuple[int, int]], frames: int, seed: int, connections: int
) -> Tally:
    """`connections` sessions side by side (seeds derived from `seed`), `frames` shared out among them."""
    tally = Tally()
    sessions = [
        SecuredFuzzSession(target, pairs, seed=seed * 1009 + i, tally=tally, probes=i == 0) for i in range(connections)
    ]
    shares = [frames // connections + (1 if i < frames % connections else 0) for i in range(connections)]
    await asyncio.gather(*(session.run(share) for session, share in zip(sessions, shares, strict=True)))
    return tally


def fuzz_secured(
    target: SecuredTarget, pairs: list[tuple[int, int]], frames: int, seed: int, *, connections: int = 1
) -> dict[str, object]:
    """Secured sessions against `target` (`connections` of them at once); their figures, with log tracebacks and
    memory as `fuzz` reports them."""
    rss_before = target.rss_bytes()
    began = time.perf_counter()
    tally = asyncio.run(_sessions(target, pairs, frames, seed, max(1, connections)))
    findings = list(tally.findings) + [f"broker log: {line}" for line in target.tracebacks()]
    if not target.alive():
        findings.append("the broker exited")
    seconds = time.perf_counter() - began
    return {
        **tally.as_dict(),
        "findings": findings,
        "seconds": round(seconds, 1),
        "frames_per_s": round(tally.frames / seconds),
        "rss_before_mib": round(rss_before / (1 << 20), 1),
        "rss_after_mib": round((target.rss_bytes() if target.alive() else 0) / (1 << 20), 1),
        "mutations": dict(tally.mutations.most_common()),
    }
