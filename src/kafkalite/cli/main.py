"""The `kafkalite` click group; every command group lives in its own module and is added here.

Bad input that click itself catches (an unknown option, a value of the wrong type) gets the same treatment as the
commands' own errors: one line on stderr naming the command and the culprit, exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from kafkalite.cli.consume import consume
from kafkalite.cli.demo import demo
from kafkalite.cli.groups import groups
from kafkalite.cli.migrate import migrate_command
from kafkalite.cli.produce import produce
from kafkalite.cli.serve import serve
from kafkalite.cli.topics import topics


class OneLineErrors(click.Group):
    """A click group whose usage errors are one line (`kafkalite topics create: Missing argument 'TOPIC'.`)."""

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        if extra.pop("standalone_mode", True) is False:
            return super().main(args, prog_name, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, standalone_mode=False, **extra)
        except click.ClickException as exc:
            where = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else "kafkalite"  # type: ignore[attr-defined]
            click.echo(f"{where}: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            sys.exit(130)
        sys.exit(result if isinstance(result, int) else 0)


@click.group("kafkalite", cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafkalite")
def main() -> None:
    """KafkaLite: a Kafka-compatible event-log broker in Python.

    The topics, produce, consume, groups and migrate commands work against any Kafka cluster (-b HOST:PORT, or
    $KAFKALITE_BOOTSTRAP).
    """


main.add_command(serve)
main.add_command(demo)
main.add_command(topics)
main.add_command(produce)
main.add_command(consume)
main.add_command(groups)
main.add_command(migrate_command)
