"""Every over-the-wire command against an unreachable or malformed address: one line on stderr, exit status 2; and
the real `kafkalite` / `python -m kafkalite` processes for exit codes and the serve data-dir message."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ports import refusing_port

from .conftest import run_cli

pytestmark = pytest.mark.interop

COMMANDS = [
    ("topics", "list"),
    ("topics", "describe", "t"),
    ("topics", "create", "t"),
    ("topics", "alter", "t", "-c", "a=b"),
    ("topics", "delete", "t"),
    ("produce", "t"),
    ("consume", "t"),
    ("groups", "list"),
    ("groups", "describe", "g"),
    ("groups", "reset-offsets", "g", "-t", "t", "--to-earliest"),
    ("groups", "delete", "g"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_unreachable_broker_is_one_line(command: tuple[str, ...]) -> None:
    address = f"127.0.0.1:{refusing_port()}"  # nothing listens there
    started = time.monotonic()
    result = run_cli(*command, "-b", address, input="x\n")
    assert (result.exit_code, result.stderr) == (2, f"kafkalite: cannot reach {address}: Connection refused\n")
    assert time.monotonic() - started < 8  # refused at once, not after the 10 s request timeout


def test_migrate_unreachable_target_is_one_line() -> None:
    source, target = f"127.0.0.1:{refusing_port()}", f"127.0.0.1:{refusing_port()}"
    result = run_cli("migrate", "-b", source, "--to", target)
    assert (result.exit_code, result.stderr) == (2, f"kafkalite: cannot reach {source}: Connection refused\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-b", "localhost"), "kafkalite: bad bootstrap address 'localhost': expected HOST:PORT\n"),
        (("-b", "host:99999"), "kafkalite: bad bootstrap address 'host:99999': expected HOST:PORT\n"),
        (("-b", "127.0.0.1:1", "-X", "novalue"), "kafkalite: bad -X 'novalue': expected key=value\n"),
        (
            ("-b", "127.0.0.1:1", "-X", "no.such.property=1"),
            'kafkalite: No such configuration property: "no.such.property"\n',
        ),
        (("--timeout", "0"), "kafkalite topics list: Invalid value for '--timeout': 0.0 is not in the range x>=0.1.\n"),
    ],
)
def test_bad_connection_options(args: tuple[str, ...], message: str) -> None:
    result = run_cli("topics", "list", *args)
    assert (result.exit_code, result.stderr) == (2, message)


def test_unresolvable_host() -> None:
    result = run_cli("topics", "list", "-b", "no-such-host.invalid:9092")
    assert result.exit_code == 2
    assert result.stderr.startswith("kafkalite: cannot reach no-such-host.invalid:9092: failed to resolve")
    assert result.stderr.count("\n") == 1


def test_bootstrap_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    address = f"127.0.0.1:{refusing_port()}"
    monkeypatch.setenv("KAFKALITE_BOOTSTRAP", address)
    result = run_cli("topics", "list")
    assert result.stderr == f"kafkalite: cannot reach {address}: Connection refused\n"


def test_usage_errors_are_one_line() -> None:
    assert run_cli("topics", "create").stderr == "kafkalite topics create: Missing argument 'TOPIC'.\n"
    assert run_cli("groups", "frobnicate").stderr == "kafkalite groups: No such command 'frobnicate'.\n"
    assert run_cli("consume", "t", "--nope").stderr.startswith("kafkalite consume: No such option '--nope'.")
    migrate = run_cli("migrate", "-b", "127.0.0.1:1")
    assert (migrate.exit_code, migrate.stderr) == (
        2,
        "kafkalite: give exactly one of --to TARGET (copy from -b) or --from SOURCE (copy to -b)\n",
    )


def test_help_has_examples() -> None:
    for command in (("topics",), ("produce",), ("consume",), ("groups",), ("migrate",)):
        result = run_cli(*command, "--help")
        assert result.exit_code == 0
        assert "Examples:" in result.stdout, command
    assert "-b, --bootstrap HOST:PORT[,...]" in run_cli("topics", "list", "--help").stdout


def test_python_dash_m_runs_the_command(tmp_path: Path) -> None:
    address = f"127.0.0.1:{refusing_port()}"
    for module in ("kafkalite", "kafkalite.cli"):
        result = subprocess.run(
            [sys.executable, "-m", module, "topics", "list", "-b", address], capture_output=True, text=True, timeout=60
        )
        assert (result.returncode, result.stdout, result.stderr) == (
            2,
            "",
            f"kafkalite: cannot reach {address}: Connection refused\n",
        )
    help_text = subprocess.run(
        [sys.executable, "-m", "kafkalite", "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert help_text.startswith("Usage: kafkalite [OPTIONS] COMMAND [ARGS]...")
    for command in ("serve", "demo", "topics", "produce", "consume", "groups", "migrate"):
        assert f"  {command} " in help_text


def test_serve_names_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "data"
    not_a_dir.write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "kafkalite", "serve", "--port", "0", "--data-dir", str(not_a_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (
        2,
        f"kafkalite: cannot use --data-dir {not_a_dir}: it is a file, not a directory\n",
    )
    below = not_a_dir / "below"
    result = subprocess.run(
        [sys.executable, "-m", "kafkalite", "serve", "--port", "0", "--data-dir", str(below)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"kafkalite: cannot use --data-dir {below}: ")
    assert result.stderr.endswith(": Not a directory\n")
    assert "localhost" not in result.stderr


def test_serve_and_help_do_not_load_a_kafka_client() -> None:
    """The over-the-wire commands are imported on use: `kafkalite serve` starts without librdkafka."""
    code = (
        "import sys\n"
        "from kafkalite.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('confluent_kafka', 'kafkalite.admin', 'rich'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.splitlines()[-1] == "[]"
