"""`python -m kafkalite.cli` runs the `kafkalite` command."""

from kafkalite.cli.main import main

main(prog_name="kafkalite")
