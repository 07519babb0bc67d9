"""`kafkalite produce` and `kafkalite consume` against KafkaLite and Tansu: keys, headers, partitions, start
positions, formats, groups, counts; bad input gets one line and exit status 2."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import confluent_kafka.admin
import pytest

from .conftest import ONE_PER_BATCH, ClusterUnderTest, lines, produce_lines

pytestmark = pytest.mark.interop


def test_keys_headers_and_json_lines(cluster: ClusterUnderTest) -> None:
    cluster.ok("topics", "create", "greetings", "-p", "1")
    produced = cluster.ok(
        "produce", "greetings", "-K", ":", "-H", "source=cli", "-H", "trace=7", "--output", "json", *ONE_PER_BATCH,
        input="user-1:hello\nuser-2:world: again\nno separator\n",
    )  # fmt: skip
    report = json.loads(produced.stdout)
    assert (report["messages"], report["delivered"], report["failed"]) == (3, 3, 0)
    records = [json.loads(line) for line in lines(cluster.ok("consume", "greetings", "--format", "json"))]
    assert [(r["partition"], r["offset"], r["key"], r["value"]) for r in records] == [
        (0, 0, "user-1", "hello"),
        (0, 1, "user-2", "world: again"),
        (0, 2, None, "no separator"),
    ]
    assert all(r["headers"] == [{"key": "source", "value": "cli"}, {"key": "trace", "value": "7"}] for r in records)
    assert all(isinstance(r["timestamp"], int) and r["timestamp"] > 1_600_000_000_000 for r in records)
    assert cluster.ok("consume", "greetings").stdout == "hello\nworld: again\nno separator\n"
    assert cluster.ok("consume", "greetings", "--format", "key-value").stdout == (
        "user-1\thello\nuser-2\tworld: again\n\tno separator\n"
    )
    template = cluster.ok("consume", "greetings", "--format", r"%t/%p@%o %k=%s (%K,%S) [%h] 100%%\n", "-n", "1")
    assert template.stdout == "greetings/0@0 user-1=hello (6,5) [source=cli,trace=7] 100%\n"


def test_partitions_and_start_positions(cluster: ClusterUnderTest) -> None:
    cluster.ok("topics", "create", "ticks", "-p", "2")
    produce_lines(cluster, "ticks", [f"p0-{i}" for i in range(10)], "-p", "0")
    produce_lines(cluster, "ticks", [f"p1-{i}" for i in range(4)], "-p", "1")

    def values(*args: str) -> list[str]:
        return lines(cluster.ok("consume", "ticks", *args))

    assert values("-p", "1") == ["p1-0", "p1-1", "p1-2", "p1-3"]
    assert values("-p", "0", "--offset", "7") == ["p0-7", "p0-8", "p0-9"]
    assert values("-p", "0", "--offset", "-2") == ["p0-8", "p0-9"]
    assert values("-p", "0", "--offset", "3", "-n", "2") == ["p0-3", "p0-4"]
    assert sorted(values()) == sorted([f"p0-{i}" for i in range(10)] + [f"p1-{i}" for i in range(4)])
    assert len(values("-n", "5")) == 5
    assert values("-p", "1", "--from-time", "2000-01-01T00:00:00Z") == ["p1-0", "p1-1", "p1-2", "p1-3"]
    if cluster.name == "kafkalite":  # Tansu answers every ListOffsets by timestamp with offset 0
        assert values("-p", "1", "--from-time", "2999-01-01") == []
    out_of_range = cluster.run("consume", "ticks", "-p", "1", "--offset", "9")
    assert (out_of_range.exit_code, out_of_range.stderr) == (
        2,
        "kafkalite: offset 9 is out of range for ticks[1]: it holds [0, 4)\n",
    )


def test_group_commits_what_it_printed(cluster: ClusterUnderTest) -> None:
    cluster.ok("topics", "create", "jobs", "-p", "1")
    produce_lines(cluster, "jobs", [f"job-{i}" for i in range(6)])
    # Tansu's group join waits out a long initial rebalance delay; explicit partitions commit without joining.
    where = ["-p", "0"] if cluster.name == "tansu" else []
    assert lines(cluster.ok("consume", "jobs", "-g", "workers", "-n", "4", *where)) == [f"job-{i}" for i in range(4)]
    assert lines(cluster.ok("consume", "jobs", "-g", "workers", *where)) == ["job-4", "job-5"]
    assert lines(cluster.ok("consume", "jobs", "-g", "workers", *where)) == []
    assert lines(cluster.ok("consume", "jobs", "-g", "workers", "--from-beginning", "-n", "1", *where)) == ["job-0"]
    assert lines(cluster.ok("consume", "jobs", "-g", "workers", *where)) == [
        "job-1",
        "job-2",
        "job-3",
        "job-4",
        "job-5",
    ]


def test_produce_from_files_to_a_partition(cluster: ClusterUnderTest, tmp_path: Path) -> None:
    cluster.ok("topics", "create", "bulk", "-p", "3")
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(b"".join(b"k%d|v%d\n" % (i, i) for i in range(500)))
    second.write_bytes(b"tail|\r\n")
    result = cluster.ok("produce", "bulk", "-f", str(first), "-f", str(second), "-K", "|", "-p", "2", "--acks", "1")
    assert result.stdout == ""
    assert result.stderr.startswith("Produced 501 message(s), ")
    records = lines(cluster.ok("consume", "bulk", "-p", "2", "--format", "%k=%s;\n"))
    assert records == [f"k{i}=v{i};" for i in range(500)] + ["tail=;"]
    assert cluster.ok("consume", "bulk", "-p", "0").stdout == ""


def test_progress_bar_for_files(kafkalite_cluster: ClusterUnderTest, tmp_path: Path) -> None:
    data = tmp_path / "lines.txt"
    data.write_bytes(b"".join(b"line %d\n" % i for i in range(20_000)))
    result = kafkalite_cluster.ok("produce", "progress", "--file", str(data), "--progress")
    assert "lines.txt" in result.stderr  # the bar, named after the file, drawn on stderr
    assert "Produced 20000 message(s), " in result.stderr
    assert len(lines(kafkalite_cluster.ok("consume", "progress"))) == 20_000


def test_binary_values_survive_json(kafkalite_cluster: ClusterUnderTest) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": kafkalite_cluster.bootstrap})
    producer.produce("binary", b"\xff\x00\xfe", key=b"\x80", headers=[("raw", b"\xc3\x28"), ("none", None)])
    assert producer.flush(10) == 0
    (record,) = [json.loads(line) for line in lines(kafkalite_cluster.ok("consume", "binary", "--format", "json"))]
    assert (record["key"], record["key_encoding"]) == ("gA==", "base64")
    assert (record["value"], record["value_encoding"]) == ("/wD+", "base64")
    assert record["headers"] == [
        {"key": "raw", "value": "wyg=", "value_encoding": "base64"},
        {"key": "none", "value": None},
    ]


def test_follow_stops_at_count(kafkalite_cluster: ClusterUnderTest) -> None:
    kafkalite_cluster.ok("topics", "create", "live", "-p", "1")
    produce_lines(kafkalite_cluster, "live", ["one", "two"])
    assert lines(kafkalite_cluster.ok("consume", "live", "--follow", "-n", "2")) == ["one", "two"]


def _python_with_sigint(disposition: str, *python_args: str) -> list[str]:
    """`python *python_args`, exec'd by a Python that first sets SIGINT to `disposition` ("SIG_DFL": as a terminal's
    shell starts a command, so the command's Python turns it into KeyboardInterrupt; "SIG_IGN": as a script starts a
    background job). The suite's own SIGINT is no guide: a suite started as a background job of a script (`make test
    &` without job control) has it ignored. A trampoline rather than `preexec_fn`, which is unsafe in a process with
    threads."""
    set_then_exec = (
        "import os, signal, sys; "
        f"signal.signal(signal.SIGINT, signal.{disposition}); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    return [sys.executable, "-c", set_then_exec, *python_args]


@contextlib.contextmanager
def _following(command: list[str], sigint: str = "SIG_DFL", **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`kafkalite <command>` as a process of its own, started with SIGINT set to `sigint`, killed at the end whatever
    the test did."""
    follower = subprocess.Popen(_python_with_sigint(sigint, "-m", "kafkalite.cli", *command), **popen)
    try:
        yield follower
    finally:
        follower.kill()
        follower.wait()
        for stream in (follower.stdout, follower.stderr):
            if stream is not None:
                stream.close()


def group_members(bootstrap: str, group: str) -> int:
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    return len(admin.describe_consumer_groups([group])[group].result(10).members)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_following_group_consumer_stopped_by_a_signal_leaves_its_group(
    kafkalite_cluster: ClusterUnderTest, signum: int
) -> None:
    """`kafkalite consume --group G --follow` run as a service and stopped the way services are (SIGTERM from a
    supervisor, Ctrl-C by hand): it leaves the group at once instead of holding its partitions for the 45 s of its
    session, and exits 143 or 130."""
    group = f"follower-{signum}"
    kafkalite_cluster.ok("topics", "create", group, "-p", "1")
    command = ["consume", group, "--group", group, "--follow", "-b", kafkalite_cluster.bootstrap]
    with _following(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as follower:
        deadline = time.monotonic() + 30
        while group_members(kafkalite_cluster.bootstrap, group) != 1:
            assert time.monotonic() < deadline, "the follower never joined its group"
            time.sleep(0.2)
        follower.send_signal(signum)
        assert follower.wait(10) == (143 if signum == signal.SIGTERM else 130)
        assert "Traceback" not in (follower.stderr.read() if follower.stderr else "")
        assert group_members(kafkalite_cluster.bootstrap, group) == 0  # left, not waiting out its session


# `kafkalite consume` with Ctrl-C sent to itself from inside librdkafka's assignment callback, the moment a signal
# that arrives as a consumer joins its group lands in.
SIGNALLED_WHILE_ASSIGNING = """
import os, signal, sys
from kafkalite.admin import consume
from kafkalite.cli.main import main

assign = consume.RecordStream._on_assign

def signalled_while_assigning(self, consumer, assigned):
    os.kill(os.getpid(), signal.SIGINT)
    assign(self, consumer, assigned)

consume.RecordStream._on_assign = signalled_while_assigning
sys.argv = ["kafkalite", *sys.argv[1:]]
main()
"""


def test_ctrl_c_while_the_group_assigns_partitions_still_exits_130_and_leaves(
    kafkalite_cluster: ClusterUnderTest,
) -> None:
    """Ctrl-C that lands while librdkafka runs the assignment callback stops the consumer like one at any other
    moment: exit 130, no traceback, the group left. (Raised inside the callback, it made `Consumer.poll` fail with a
    SystemError: one stop in fifteen, right after a join.)"""
    group = "assigning"
    kafkalite_cluster.ok("topics", "create", group, "-p", "1")
    command = ["consume", group, "--group", group, "--follow", "-b", kafkalite_cluster.bootstrap]
    done = subprocess.run(
        _python_with_sigint("SIG_DFL", "-c", SIGNALLED_WHILE_ASSIGNING, *command),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert group_members(kafkalite_cluster.bootstrap, group) == 0


def _blocked_writing(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/wchan").read_text().endswith("pipe_write")  # anon_pipe_write on newer kernels
    return False


def test_a_group_consumer_blocked_on_a_full_stdout_still_stops_on_sigterm(kafkalite_cluster: ClusterUnderTest) -> None:
    """Between polls a signal stops the command where it lands: one blocked writing to a pipe nobody reads (a stalled
    `| less`) still exits 143 on a service manager's SIGTERM, instead of waiting for the reader."""
    group = "stalled-reader"
    kafkalite_cluster.ok("topics", "create", group, "-p", "1")
    kafkalite_cluster.ok("produce", group, input="".join(f"{i:0200d}\n" for i in range(2_000)))  # 400 KB > a pipe
    command = ["consume", group, "--group", group, "--follow", "-b", kafkalite_cluster.bootstrap]
    with _following(command, stdout=subprocess.PIPE) as follower:
        deadline = time.monotonic() + 30
        while not _blocked_writing(follower.pid):
            assert time.monotonic() < deadline, "the consumer never filled its stdout"
            time.sleep(0.05)
        follower.send_signal(signal.SIGTERM)
        assert follower.wait(10) == 143


def test_a_consumer_started_with_sigint_ignored_keeps_ignoring_it(kafkalite_cluster: ClusterUnderTest) -> None:
    """`kafkalite consume ... &` in a script starts with SIGINT ignored: the script's Ctrl-C is not for it."""
    kafkalite_cluster.ok("topics", "create", "background", "-p", "1")
    command = ["consume", "background", "--follow", "-b", kafkalite_cluster.bootstrap]
    with _following(command, "SIG_IGN", stdout=subprocess.DEVNULL) as follower:
        time.sleep(1.0)  # connected and polling
        follower.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            follower.wait(1.5)
        follower.send_signal(signal.SIGTERM)
        assert follower.wait(10) == 143


def test_bad_input_is_one_line(cluster: ClusterUnderTest, tmp_path: Path) -> None:
    cluster.ok("topics", "create", "strict", "-p", "2")
    cases = {
        ("produce", "strict", "-p", "5"): "kafkalite: topic 'strict' has no partition 5 (it has 2)\n",
        ("produce", "strict", "-H", "nokey"): "kafkalite: bad -H 'nokey': expected key=value\n",
        ("produce", "strict", "-f", str(tmp_path / "missing.txt")): (
            f"kafkalite: cannot read --file {tmp_path / 'missing.txt'}: no such file\n"
        ),
        ("consume", "strict", "-p", "9"): "kafkalite: topic 'strict' has no partition 9 (it has 2)\n",
        ("consume", "absent"): f"kafkalite: topic 'absent' does not exist on {cluster.bootstrap}\n",
        ("consume", "strict", "--format", "%q"): (
            "kafkalite: unknown token %q in format '%q' (known: %t %p %o %k %s %K %S %T %h %%)\n"
        ),
        ("consume", "strict", "--format", "xml"): (
            "kafkalite: unknown format 'xml': use value, key-value, json, or a template with %-tokens\n"
        ),
        ("consume", "strict", "--from-time", "yesterday"): (
            "kafkalite: bad time 'yesterday': expected ISO 8601, e.g. 2026-05-16T11:43:26Z\n"
        ),
        ("consume", "strict", "--offset", "1", "--from-beginning"): (
            "kafkalite: --from-beginning and --offset cannot be combined: choose one start position\n"
        ),
        ("consume", "strict", "-n", "0"): (
            "kafkalite consume: Invalid value for '-n' / '--count': 0 is not in the range x>=1.\n"
        ),
    }
    for args, message in cases.items():
        result = cluster.run(*args, input="x\n")
        assert (result.exit_code, result.stderr) == (2, message), args
