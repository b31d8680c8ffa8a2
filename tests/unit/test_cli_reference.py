"""docs/cli.md is what the parser says (regenerate with `python -m dbrouter.cli.reference > docs/cli.md`)."""

from __future__ import annotations

from dbrouter.cli.reference import reference_markdown
from tests.conftest import ROOT


def test_docs_cli_md_matches_the_parser():
    text = reference_markdown()
    assert "## dbrouter build" in text and "--force" in text and "## dbrouter statements add" in text
    assert (ROOT / "docs" / "cli.md").read_text() == text, (
        "docs/cli.md is out of date: run `python -m dbrouter.cli.reference > docs/cli.md`")


def test_every_command_has_a_section_and_a_row():
    text = reference_markdown()
    for name in ("ingest", "build", "refresh", "route", "ask", "link", "serve", "mcp", "report", "eval scale"):
        assert f"\n## dbrouter {name}\n" in text
        assert f"[`dbrouter {name}`](#dbrouter-{name.replace(' ', '-')})" in text
