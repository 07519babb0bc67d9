"""kcat (Debian's build links librdkafka 2.0.x, stricter about ApiVersions v3 than current clients), as a subprocess."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafkalite.server import ThreadedServer

pytestmark = [
    pytest.mark.interop,
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)"),
]


def kcat(server: ThreadedServer, *args: str, stdin: bytes = b"") -> str:
    done = subprocess.run(["kcat", "-b", server.bootstrap, *args], input=stdin, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_consume_and_metadata(threaded: ThreadedServer, codec: str) -> None:
    kcat(threaded, "-P", "-t", "kc", "-K", ":", "-z", codec, stdin=b"k1:one\n:two\nk3:three\n")
    assert kcat(threaded, "-C", "-t", "kc", "-o", "beginning", "-e", "-f", "%k=%s@%o\n").splitlines() == [
        "k1=one@0",
        "=two@1",
        "k3=three@2",
    ]
    assert 'topic "kc" with 1 partitions' in kcat(threaded, "-L")
