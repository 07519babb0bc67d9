"""MkDocs hook: the tables of the site that must never go stale, generated from the code at every build.

A page asks for a table with a marker on a line of its own:

    <!-- kafkalite:api-table -->          every Kafka API key: the versions KafkaLite serves (the server's handler
                                          registry, which ApiVersions also answers from), the versions Kafka defines
                                          (kio's schemas, generated from Kafka's own JSON specs), and what the
                                          handler module says each version adds
    <!-- kafkalite:cli-options NAME -->   the options of `kafkalite NAME`, as click renders them for `--help`

`tests/documentation/test_generated_tables.py` checks the same rows against the registry, so a handler whose
docstring and registration disagree fails the suite, not only the docs build.
"""

from __future__ import annotations

import ast
import html
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

API_TABLE = "<!-- kafkalite:api-table -->"
UNSERVED_TABLE = "<!-- kafkalite:unserved-api-table -->"
CLI_OPTIONS = re.compile(r"^<!-- kafkalite:cli-options (\S+) -->$", re.MULTILINE)

# The first line of every handler module: "Heartbeat (API key 12), versions 0-4."
_HANDLER_TITLE = re.compile(r"^(?P<name>\w+) \(API key (?P<key>\d+)\), versions? (?P<low>\d+)(?:[-–](?P<high>\d+))?")


@dataclass(frozen=True)
class ServedApi:
    """One API the server registers, with what its handler module's docstring says about it."""

    api_key: int
    name: str
    min_version: int
    max_version: int
    documented: tuple[int, int]  # the range the module's first line states
    notes: str  # the docstring's paragraph on what each version adds
    kafka_versions: tuple[int, int]


@dataclass(frozen=True)
class UnservedApi:
    api_key: int
    name: str
    kafka_versions: tuple[int, int]


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


def _kafka_versions(api_key: int) -> tuple[int, int]:
    from kio.schema.index import api_key_map, schema_name_map

    versions = sorted(schema_name_map[api_key_map[api_key]])
    return versions[0], versions[-1]


def _module_docstring(path: Path) -> str:
    """A module's docstring, read from its source: a compiled module (`protocol.native`) has none at run time."""
    return (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or "").strip()


def handler_docs() -> dict[int, tuple[str, tuple[int, int], str]]:
    """api_key -> (name, documented version range, notes) for every handler module in `kafkalite.server.handlers`.

    A handler module is one whose docstring opens with "Name (API key N), versions a-b."; the tests check that every
    registered API has exactly one, with the registered range.
    """
    import kafkalite.server.handlers as package

    found: dict[int, tuple[str, tuple[int, int], str]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        name = f"{package.__name__}.{info.name}"
        doc = _module_docstring(Path(package.__path__[0]) / f"{info.name}.py")
        title = _HANDLER_TITLE.match(doc)
        if title is None:  # a helper module; a handler without its title line is caught by the registry check
            continue
        key = int(title["key"])
        if key in found:
            raise ValueError(f"{name}: API key {key} is documented by two handler modules")
        low = int(title["low"])
        high = int(title["high"] or low)
        paragraphs = doc.split("\n\n")
        notes = " ".join(paragraphs[1].split()) if len(paragraphs) > 1 else ""
        found[key] = (title["name"], (low, high), notes)
    return found


def served_apis() -> list[ServedApi]:
    """Every API the server answers, from its registry, by API key."""
    from kafkalite.server.dispatch import supported_ranges

    docs = handler_docs()
    rows = []
    for api_key, low, high in supported_ranges():
        name, documented, notes = docs.get(api_key, (f"API key {api_key}", (-1, -1), ""))
        rows.append(ServedApi(api_key, name, low, high, documented, notes, _kafka_versions(api_key)))
    return rows


def unserved_apis() -> list[UnservedApi]:
    """Every API key Kafka defines (as kio knows them) that the server does not answer."""
    from kio.schema.index import api_key_map

    from kafkalite.server.dispatch import supported_ranges

    served = {api_key for api_key, _, _ in supported_ranges()}
    return [
        UnservedApi(api_key, _camel(name), _kafka_versions(api_key))
        for api_key, name in sorted(api_key_map.items())
        if api_key not in served
    ]


def _versions(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}–{high}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_api_table() -> str:
    """A summary table of the served APIs, then one section per API with what its versions add."""
    lines = ["| API | key | served | in Kafka's specs |", "|---|---:|---|---|"]
    sections = []
    for api in served_apis():
        anchor = f"api-{api.name.lower()}"
        served = _versions(api.min_version, api.max_version)
        lines.append(f"| [{api.name}](#{anchor}) | {api.api_key} | {served} | {_versions(*api.kafka_versions)} |")
        sections.append(f"### {api.name} {{#{anchor}}}\n\nAPI key {api.api_key}, versions {served}.\n\n{api.notes}\n")
    return "\n".join(lines) + "\n\n" + "\n".join(sections)


def render_unserved_table() -> str:
    lines = ["| API | key | in Kafka's specs |", "|---|---:|---|"]
    lines += [f"| {api.name} | {api.api_key} | {_versions(*api.kafka_versions)} |" for api in unserved_apis()]
    return "\n".join(lines)


def cli_command_names() -> list[str]:
    """Every command of the `kafkalite` group, as `kafkalite --help` lists them."""
    from kafkalite.cli import main

    return list(main.list_commands(click.Context(main)))


def _options_table(command: click.Command, context: click.Context) -> str:
    help_option = command.get_help_option(context)
    lines = [f"`{' '.join(['kafkalite', *context.command_path.split()[1:], *command.collect_usage_pieces(context)])}`"]
    rows = ["| option | meaning |", "|---|---|"]
    for param in command.get_params(context):
        record = param.get_help_record(context)
        if record is None or param is help_option:
            continue
        option, meaning = record
        if isinstance(param, click.Argument) and not meaning.strip():
            continue  # named in the usage line above
        code = html.escape(option).replace("|", "&#124;")  # a code span cannot hold an escaped pipe
        rows.append(f"| <code>{code}</code> | {_cell(meaning) or '&nbsp;'} |")
    if len(rows) > 2:
        lines += ["", *rows]
    return "\n".join(lines)


def render_cli_options(command_name: str) -> str:
    """The usage and options of `kafkalite COMMAND` in click's own words (what `--help` prints); for a command group,
    one section per subcommand."""
    from kafkalite.cli import main

    root = click.Context(main, info_name="kafkalite")
    command = main.get_command(root, command_name)  # the group loads some commands on first use
    if command is None:
        raise ValueError(f"no command 'kafkalite {command_name}'")
    context = click.Context(command, info_name=command_name, parent=root)
    summary = command.get_short_help_str(limit=300)
    if not isinstance(command, click.Group):
        return f"{summary}\n\n{_options_table(command, context)}"
    sections = [f"{summary}\n"]
    for name in command.list_commands(context):
        sub = command.get_command(context, name)
        if sub is None:
            continue
        sub_context = click.Context(sub, info_name=name, parent=context)
        summary = sub.get_short_help_str(limit=200)
        sections.append(f"### `kafkalite {command_name} {name}`\n\n{summary}\n\n{_options_table(sub, sub_context)}\n")
    return "\n".join(sections)


def expand(markdown: str) -> str:
    """The page with every marker replaced by its table."""
    if API_TABLE in markdown:
        markdown = markdown.replace(API_TABLE, render_api_table())
    if UNSERVED_TABLE in markdown:
        markdown = markdown.replace(UNSERVED_TABLE, render_unserved_table())
    return CLI_OPTIONS.sub(lambda match: render_cli_options(match[1]), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return expand(markdown)
