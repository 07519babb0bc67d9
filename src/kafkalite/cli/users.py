"""`kafkalite users`: SASL credentials in a data directory, edited while the broker is stopped.

    kafkalite users set NAME [--mechanism SCRAM-SHA-512|SCRAM-SHA-256|PLAIN] [--password-stdin] --data-dir DIR
    kafkalite users list --data-dir DIR
    kafkalite users delete NAME [--mechanism M] --data-dir DIR

Passwords are stored salted and hashed (`security.credentials`); `list` never shows a password or a hash. `set` and
`delete` hold the data directory's lock while they write, so they are refused while a broker runs over it (that
broker keeps its own copy of the users and would write over the edit).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from kafkalite.cli._common import fail
from kafkalite.errors import DataDirectoryInUseError, KafkaLiteError
from kafkalite.storage import DirectoryLock


@click.group()
def users() -> None:
    """SASL users in a data directory, edited offline (while the broker is stopped), as Kafka's storage tool does.

    A running broker changes users through AlterUserScramCredentials instead.
    """


_MECHANISMS = click.Choice(["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"], case_sensitive=False)


@contextmanager
def _offline(data_dir: Path) -> Iterator[None]:
    """The data directory, locked as a broker locks it, for the length of an edit."""
    try:
        lock = DirectoryLock.acquire(data_dir)
    except DataDirectoryInUseError as exc:
        fail(f"{exc}; a running broker takes user changes through AlterUserScramCredentials")
    except OSError as exc:
        fail(f"cannot use --data-dir {data_dir}: {exc.strerror or exc}")
    try:
        yield
    finally:
        lock.release()


_DATA_DIR = click.option("--data-dir", default="./data", show_default=True, help="The broker's data directory.")


@users.command("set")
@click.argument("name")
@click.option("--mechanism", type=_MECHANISMS, default="SCRAM-SHA-512", show_default=True)
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of standard input.")
@click.option("--iterations", default=4096, show_default=True, type=click.IntRange(4096, 16384))
@_DATA_DIR
def users_set(name: str, mechanism: str, password_stdin: bool, iterations: int, data_dir: str) -> None:
    """Create NAME or replace its password for one mechanism (stored salted and hashed)."""
    from kafkalite.security.credentials import CredentialStore

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    if not password:
        fail("empty password")
    try:
        with _offline(Path(data_dir)):
            CredentialStore(Path(data_dir)).set_password(name, mechanism.upper(), password, iterations)
    except KafkaLiteError as exc:
        fail(str(exc))
    click.echo(f"{mechanism.upper()} credential set for user {name}")


@users.command("list")
@_DATA_DIR
def users_list(data_dir: str) -> None:
    """Each user with its mechanisms and iteration counts (never a password or hash)."""
    from kafkalite.security.credentials import CredentialStore

    try:
        listing = CredentialStore(Path(data_dir)).users()
    except KafkaLiteError as exc:
        fail(str(exc))
    for name, mechanisms in listing.items():
        click.echo(f"{name}\t" + ", ".join(f"{m} (iterations={i})" for m, i in mechanisms))


@users.command("delete")
@click.argument("name")
@click.option("--mechanism", type=_MECHANISMS, default=None, help="Only this mechanism (default: all of them).")
@_DATA_DIR
def users_delete(name: str, mechanism: str | None, data_dir: str) -> None:
    """Remove NAME's credentials."""
    from kafkalite.security.credentials import CredentialStore

    try:
        with _offline(Path(data_dir)):
            removed = CredentialStore(Path(data_dir)).delete(name, mechanism.upper() if mechanism else None)
    except KafkaLiteError as exc:
        fail(str(exc))
    if not removed:
        fail(f"no {mechanism.upper() + ' ' if mechanism else ''}credentials for user {name!r}")
    click.echo(f"deleted {mechanism.upper() if mechanism else 'all'} credentials of user {name}")
