"""The `kafkalite` click group; every command group lives in its own module and is added here."""

from __future__ import annotations

import click

from kafkalite.cli.demo import demo
from kafkalite.cli.serve import serve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafkalite")
def main() -> None:
    """KafkaLite: a Kafka-compatible event-log broker in Python."""


main.add_command(serve)
main.add_command(demo)
