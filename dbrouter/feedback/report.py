"""`dbrouter report`: what the query log says - traffic per database, abstention rate, unanswered
questions, slowest calls - as text and as one self-contained HTML page (inline SVG, no script,
no network)."""

from __future__ import annotations

import html
import math
import shlex
import statistics
from collections import Counter
from dataclasses import dataclass, field

from dbrouter.feedback.log import LogEntry

UNANSWERED = ("abstained", "error", "needs_llm")
"""Statuses counted as unanswered."""


@dataclass
class Summary:
    """The log summed up."""

    calls: int
    by_tool: dict[str, int]
    by_database: list[tuple[str, int]]
    abstention_rate: float
    unanswered: list[tuple[str, int]]
    slowest: list[tuple[float, str, str]]
    p50_s: float
    p95_s: float
    users: dict[str, int] = field(default_factory=dict)
    candidates: list[tuple[str, str]] = field(default_factory=list)
    """Unanswered questions with the database their ranking put first: candidate examples to verify."""


def summarize(entries: list[LogEntry], top: int = 10) -> Summary:
    """Sum up log entries.

    Args:
        entries: the log's entries.
        top: rows of each top list.

    Returns:
        The :class:`Summary`.
    """
    routed = [e for e in entries if e.tool in ("link", "ask") or e.tool.startswith("route")]  # serve: route_query...
    seconds = sorted(e.seconds for e in entries)
    unanswered = Counter(e.question for e in routed if e.question and (e.status in UNANSWERED or e.abstained))
    closest = {e.question: e.ranking[0] for e in routed if e.question in unanswered and e.ranking}
    return Summary(
        calls=len(entries), by_tool=dict(Counter(e.tool for e in entries)),
        by_database=Counter(e.chosen for e in entries if e.chosen).most_common(top),
        abstention_rate=round(sum(e.abstained for e in routed) / len(routed), 4) if routed else 0.0,
        unanswered=unanswered.most_common(top),
        slowest=sorted(((e.seconds, e.tool, e.question or e.sql or "") for e in entries), reverse=True)[:top],
        p50_s=round(statistics.median(seconds), 3) if seconds else 0.0,
        p95_s=round(seconds[max(0, math.ceil(0.95 * len(seconds)) - 1)], 3) if seconds else 0.0,  # nearest rank
        users=dict(Counter(e.user or "(none)" for e in entries)),
        candidates=[(q, closest[q]) for q, _ in unanswered.most_common(top) if q in closest])


def text_report(s: Summary) -> str:
    """The summary as text.

    Args:
        s: :func:`summarize`'s result.

    Returns:
        Lines of text.
    """
    lines = [f"{s.calls} calls ({', '.join(f'{k} {v}' for k, v in sorted(s.by_tool.items()))}); "
             f"p50 {s.p50_s:.3f} s, p95 {s.p95_s:.3f} s; abstention rate {s.abstention_rate:.1%}",
             "", "traffic per database:"]
    lines += [f"  {n:6d}  {printable(db)}" for db, n in s.by_database] or ["  (none)"]
    lines += ["", "unanswered questions (abstained, failed or needing an LLM):"]
    lines += [f"  {n:6d}  {printable(q)}" for q, n in s.unanswered] or ["  (none)"]
    if s.candidates:
        lines += ["", "candidate examples (the closest database; write the SQL that answers it, check the "
                      "database, then add it):"]
        lines += [f"  dbrouter examples add --db {shlex.quote(printable(db))} --question {shlex.quote(printable(q))} "
                  "--sql '<the SELECT that answers it>'" for q, db in s.candidates]
    lines += ["", "slowest calls:"]
    lines += [f"  {sec:8.3f} s  {printable(tool):8s} {printable(text[:100])}" for sec, tool, text in s.slowest] \
        or ["  (none)"]
    return "\n".join(lines)


def printable(text: str) -> str:
    """``text`` for a terminal: control characters (newlines, ANSI escapes) shown as ``\\n``, ``\\x1b``.

    Args:
        text: a question or SQL from the log (a client's words).

    Returns:
        One line of printable characters.
    """
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in str(text))


def _bars(title: str, rows: list[tuple[str, float]], unit: str = "") -> str:
    """One horizontal bar chart as inline SVG."""
    if not rows:
        return f"<h2>{html.escape(title)}</h2><p>none</p>"
    width, bar_h, label_w = 640, 22, 260
    top = max(v for _, v in rows) or 1
    parts = [f'<svg role="img" aria-label="{html.escape(title)}" width="{width}" height="{bar_h * len(rows) + 10}" '
             f'xmlns="http://www.w3.org/2000/svg">']
    for i, (label, value) in enumerate(rows):
        w = max(1, int((width - label_w - 80) * value / top))
        y = i * bar_h + 5
        parts.append(f'<text x="0" y="{y + 15}" font-size="13">{html.escape(label[:40])}</text>'
                     f'<rect class="bar" x="{label_w}" y="{y}" width="{w}" height="{bar_h - 6}" fill="#3b6ea5"/>'
                     f'<text x="{label_w + w + 6}" y="{y + 15}" font-size="12">{value:g}{unit}</text>')
    parts.append("</svg>")
    return f"<h2>{html.escape(title)}</h2>" + "".join(parts)


def html_report(s: Summary, title: str = "dbrouter query log") -> str:
    """The summary as one self-contained HTML page: inline SVG bar charts, no script, no network.

    Args:
        s: :func:`summarize`'s result.
        title: the page title.

    Returns:
        The page.
    """
    unanswered = "".join(f"<tr><td>{n}</td><td>{html.escape(q)}</td></tr>" for q, n in s.unanswered)
    slow = "".join(f"<tr><td>{sec:.3f}</td><td>{html.escape(t)}</td><td>{html.escape(x[:200])}</td></tr>"
                   for sec, t, x in s.slowest)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>body{{font-family:sans-serif;margin:2em;max-width:60em}}td{{padding:2px 8px;vertical-align:top}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<p id="totals">{s.calls} calls; p50 {s.p50_s:.3f} s, p95 {s.p95_s:.3f} s;
abstention rate <span id="abstention">{s.abstention_rate:.1%}</span></p>
{_bars("Traffic per database", [(db, n) for db, n in s.by_database])}
{_bars("Calls per tool", sorted(s.by_tool.items()))}
{_bars("Slowest calls (s)", [(f"{t}: {x}", sec) for sec, t, x in s.slowest], " s")}
<h2>Unanswered questions</h2>
<table id="unanswered"><tr><th>times</th><th>question</th></tr>{unanswered}</table>
<h2>Slowest calls</h2>
<table id="slowest"><tr><th>seconds</th><th>tool</th><th>question or SQL</th></tr>{slow}</table>
</body></html>
"""
