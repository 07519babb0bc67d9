"""The site's generated tables say what the code does: the API table against the server's registry, the CLI tables
against the commands. A handler whose docstring and registration disagree fails here, not only in the docs build."""

from __future__ import annotations

import re

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


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_cli_table_lists_every_option_of_the_command(command: str) -> None:
    import click

    from kafkalite.cli import main

    assert isinstance(main, click.Group)
    cmd = main.get_command(click.Context(main), command)
    assert cmd is not None
    table = generated.render_cli_options(command)
    context = click.Context(cmd, info_name=command)
    for param in cmd.get_params(context):
        if isinstance(param, click.Option) and param is not cmd.get_help_option(context):
            assert f"<code>{param.opts[0]}" in table, f"{param.opts[0]} missing from the table of {command}"


def test_unknown_cli_command_is_an_error() -> None:
    with pytest.raises(ValueError, match="no command 'kafkalite nope'"):
        generated.render_cli_options("nope")


def test_every_marker_in_the_docs_is_expanded() -> None:
    pages = sorted(DOCS.rglob("*.md"))
    assert pages
    for page in pages:
        expanded = generated.expand(page.read_text(encoding="utf-8"))
        assert not re.search(r"<!-- kafkalite:", expanded), f"{page}: a marker the hook does not know"
