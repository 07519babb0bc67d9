"""The site's generated tables say what the code does: the API table against the server's registry, the CLI tables
against the commands. A handler whose docstring and registration disagree fails here, not only in the docs build."""

from __future__ import annotations

import re

import click
import pytest
from kio.schema.index import api_key_map

import kafkalite.server.handlers  # noqa: F401  (registers every handler)
from kafkalite.server.dispatch import supported_ranges

from .hooks import DOCS, load_generated

generated = load_generated()


def test_every_registered_api_is_documented_by_exactly_its_handler_module() -> None:
    docs = generated.handler_docs()
    for api_key, low, high in supported_ranges():
        assert api_key in docs, f"no handler module's docstring opens with '... (API key {api_key}), versions ...'"
        name, documented, _notes = docs[api_key]
        assert documented == (low, high), f"{name}: docstring says versions {documented}, registered {low}-{high}"
    assert set(docs) == {api_key for api_key, _, _ in supported_ranges()}, "a handler module documents an API key "
    "that is not registered"


def test_served_rows_are_the_registry() -> None:
    rows = generated.served_apis()
    assert [(r.api_key, r.min_version, r.max_version) for r in rows] == supported_ranges()
    for row in rows:
        assert row.notes, f"{row.name}: the handler docstring has no paragraph on what each version adds"
        kafka_low, kafka_high = row.kafka_versions
        assert kafka_low <= row.min_version <= row.max_version <= kafka_high, row


def test_served_and_unserved_cover_every_api_key_once() -> None:
    served = {r.api_key for r in generated.served_apis()}
    unserved = {r.api_key for r in generated.unserved_apis()}
    assert not served & unserved
    assert served | unserved == set(api_key_map)


def test_api_table_renders_one_row_and_one_section_per_served_api() -> None:
    rendered = generated.render_api_table()
    rows = [line for line in rendered.splitlines() if line.startswith("| [")]
    assert len(rows) == len(supported_ranges())
    assert rows[0].startswith("| [Produce](#api-produce) | 0 | ")
    assert rendered.count("\n### ") + rendered.startswith("### ") == len(supported_ranges())
    assert "### ApiVersions {#api-apiversions}" in rendered


def _commands() -> list[tuple[str, click.Command]]:
    """Every (name, command) a reader can type: top-level commands, and each subcommand of a group."""
    from kafkalite.cli import main

    root = click.Context(main, info_name="kafkalite")
    found: list[tuple[str, click.Command]] = []
    for name in main.list_commands(root):
        command = main.get_command(root, name)
        assert command is not None
        if isinstance(command, click.Group):
            context = click.Context(command, info_name=name, parent=root)
            for sub in command.list_commands(context):
                subcommand = command.get_command(context, sub)
                assert subcommand is not None
                found.append((f"{name} {sub}", subcommand))
        else:
            found.append((name, command))
    return found


def test_every_command_has_its_section_on_the_flags_page() -> None:
    page = (DOCS / "operations" / "flags.md").read_text(encoding="utf-8")
    for name in generated.cli_command_names():
        assert f"<!-- kafkalite:cli-options {name} -->" in page, f"kafkalite {name} has no section in flags.md"


def test_cli_tables_list_every_option_of_every_command() -> None:
    for name, command in _commands():
        top = name.split()[0]
        rendered = generated.render_cli_options(top)
        context = click.Context(command, info_name=name.split()[-1])
        for param in command.get_params(context):
            if isinstance(param, click.Option) and param is not command.get_help_option(context):
                assert f"<code>{param.opts[0]}" in rendered, f"{param.opts[0]} missing from kafkalite {name}"
        if " " in name:
            assert f"### `kafkalite {name}`" in rendered


def test_unknown_cli_command_is_an_error() -> None:
    with pytest.raises(ValueError, match="no command 'kafkalite nope'"):
        generated.render_cli_options("nope")


def test_every_marker_in_the_docs_is_expanded() -> None:
    pages = sorted(DOCS.rglob("*.md"))
    assert pages
    for page in pages:
        expanded = generated.expand(page.read_text(encoding="utf-8"))
        assert not re.search(r"<!-- kafkalite:", expanded), f"{page}: a marker the hook does not know"
