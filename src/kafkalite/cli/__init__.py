"""The `kafkalite` command: argument parsing and output only; the work lives in the layers below.

One module per command group, each holding a click command that `kafkalite.cli.main` adds to the `kafkalite`
group:

    kafkalite serve [--host H] [--port 9092] [--data-dir ./data] [--fsync always|never]
                    [--http-port 9644] [--http-host localhost] [--no-http] ...               (cli/serve.py)
    kafkalite demo  [--messages N] [--data-dir DIR]                                           (cli/demo.py)
    kafkalite topics list|describe|create|alter|delete ...   -b HOST:PORT                    (cli/topics.py)
    kafkalite produce TOPIC [-K SEP] [-H K=V] [-p N] [--file F]                               (cli/produce.py)
    kafkalite consume TOPIC [--from-beginning|--offset N|--from-time T] [--format F] [-g G]   (cli/consume.py)
    kafkalite groups list|describe|reset-offsets|delete ...                                  (cli/groups.py)
    kafkalite migrate -b SOURCE --to TARGET [--topics P] [--groups P] [--verify]             (cli/migrate.py)

The over-the-wire commands share `-b/--bootstrap`, `-X key=value`, `--timeout` and `-v` (`cli/_cluster.py`) and do
their work in `kafkalite.admin` and `kafkalite.migrate`; these modules only parse arguments and print.

Bad input gets one line on stderr and a non-zero exit status (`kafkalite.cli._common.fail`); tracebacks are for bugs
only.

Start-up time matters (`kafkalite serve` is often a throwaway test broker): a command module imports only click and
its own small helpers at import time, and what its command needs when it runs; the over-the-wire commands are
registered lazily (`main.LAZY_COMMANDS`), so `--help` and `serve` never load the demo, rich or a Kafka client
library.
"""

from kafkalite.cli.main import main

__all__ = ["main"]
