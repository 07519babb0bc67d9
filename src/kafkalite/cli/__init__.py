"""The `kafkalite` command: argument parsing and output only; the work lives in the layers below.

One module per command group, each holding a click command that `kafkalite.cli.main` adds to the `kafkalite`
group:

    kafkalite serve [--host H] [--port 9092] [--data-dir ./data] [--fsync always|never] ...   (cli/serve.py)
    kafkalite demo  [--messages N] [--data-dir DIR]                                           (cli/demo.py)

Bad input gets one line on stderr and a non-zero exit status (`kafkalite.cli._common.fail`); tracebacks are for bugs
only.

Start-up time matters (`kafkalite serve` is often a throwaway test broker): a command module imports only click and
its own small helpers at import time, and what its command needs when it runs, so `--help` and `serve` never load
the demo, rich or a Kafka client library.
"""

from kafkalite.cli.main import main

__all__ = ["main"]
