"""The `kafkalite` click group; every command group lives in its own module and is added here.

Every command is registered lazily: its module is imported only when that command runs, and `kafkalite --help`
lists them from the table below. `kafkalite serve` therefore starts without importing librdkafka, and `kafkalite
consume` without asyncio or the broker. A command added with `main.add_command` works as in any click group.

Bad input that click itself catches (an unknown option, a value of the wrong type) gets the same treatment as the
commands' own errors: one line on stderr naming the command and the culprit, exit status 2.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import click

# name → (module, attribute, one-line help shown by `kafkalite --help`)
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "serve": ("kafkalite.cli.serve", "serve", "Serve the Kafka wire protocol until SIGINT or SIGTERM."),
    "demo": ("kafkalite.cli.demo", "demo", "Run the seed's story: producers, groups, a rebalance, the DLQ."),
    "topics": ("kafkalite.cli.topics", "topics", "List, inspect, create, change and delete topics."),
    "produce": ("kafkalite.cli.produce", "produce", "Produce one message per line of stdin or --file."),
    "consume": ("kafkalite.cli.consume", "consume", "Print a topic's records (value, key-value, json, template)."),
    "groups": ("kafkalite.cli.groups", "groups", "List and inspect consumer groups, reset offsets, delete."),
    "dlq": ("kafkalite.cli.dlq", "dlq", "Dead letters: list, show, and replay them to the group that failed."),
    "users": ("kafkalite.cli.users", "users", "Set, list and delete SASL users in a data directory (offline)."),
    "migrate": (
        "kafkalite.cli.migrate",
        "migrate_command",
        "Copy topics, records and group offsets to another cluster.",
    ),
}


class KafkaLiteGroup(click.Group):
    """Lazily loaded commands, and usage errors on one line (`kafkalite topics create: Missing argument 'TOPIC'.`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = LAZY_COMMANDS.get(cmd_name)
        if lazy is None:
            return super().get_command(ctx, cmd_name)
        module, attribute, _ = lazy
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in LAZY_COMMANDS:
                rows.append((name, LAZY_COMMANDS[name][2]))
            else:
                command = super().get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        if extra.pop("standalone_mode", True) is False:
            return super().main(args, prog_name, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, standalone_mode=False, **extra)
        except click.ClickException as exc:
            context = getattr(exc, "ctx", None)
            where = context.command_path if context is not None else "kafkalite"
            click.echo(f"{where}: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            sys.exit(130)
        sys.exit(result if isinstance(result, int) else 0)


@click.group("kafkalite", cls=KafkaLiteGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafkalite")
def main() -> None:
    """KafkaLite: a Kafka-compatible event-log broker in Python.

    The topics, produce, consume, groups, dlq and migrate commands work against any Kafka cluster (-b HOST:PORT, or
    $KAFKALITE_BOOTSTRAP).
    """
