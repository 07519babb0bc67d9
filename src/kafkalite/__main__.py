"""`python -m kafkalite` runs the `kafkalite` command."""

from kafkalite.cli import main

main(prog_name="kafkalite")
