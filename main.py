"""The seed's demo: `python main.py` runs the whole KafkaLite story and prints a summary (see kafkalite.demo)."""

import sys

from kafkalite.cli import main

if __name__ == "__main__":
    sys.exit(main(["demo", *sys.argv[1:]]))
