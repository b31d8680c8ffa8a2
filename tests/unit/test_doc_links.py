"""Every relative link of the README, BENCHMARKS.md, the CHANGELOG and docs/ names a file that exists
(docs were split into pages and the history moved to docs/decisions/: a moved page breaks links)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_resolve():
    pages = [ROOT / "README.md", ROOT / "BENCHMARKS.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [f"{page.relative_to(ROOT)} -> {target}" for page in pages for target in LINK.findall(page.read_text())
              if not target.startswith(("http://", "https://", "mailto:")) and not (page.parent / target).exists()]
    assert broken == [], "links to missing files: " + "; ".join(broken)


def test_benchmarks_holds_generated_blocks_and_the_history_is_in_decisions():
    text = (ROOT / "BENCHMARKS.md").read_text()
    opened = re.findall(r"<!-- dbrouter:(.+?) -->", text)
    assert opened and all(f"<!-- /dbrouter:{key} -->" in text for key in opened)
    assert "## Summary" in text.split("<!-- dbrouter:", 1)[0]  # the summary comes before the blocks
    assert not re.search(r"(?m)^## .*\(issue \d+", text), "a round's narrative belongs in docs/decisions/"
    index = (ROOT / "docs" / "decisions" / "README.md").read_text()
    records = sorted(p.name for p in (ROOT / "docs" / "decisions").glob("adr-*.md"))
    assert records and all(f"({name})" in index for name in records)
