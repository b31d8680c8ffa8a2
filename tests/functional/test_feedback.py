"""The feedback loop on the demo KB: routing and answers through the CLI and the MCP tools are
logged (opt-out), `dbrouter report` sums the log up as text and as a self-contained HTML page,
and `dbrouter examples add` turns a verified question/SQL pair into an example the next build
routes with."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser

import pytest

from dbrouter.feedback.log import LogEntry, append, read
from tests.conftest import copy_built_kb, run_cli

QUESTION = "How many singers do we have?"


def _entries(path) -> list[LogEntry]:
    return list(read(path)) if path.exists() else []


def test_cli_route_and_ask_are_logged_unless_opted_out(built_kb, tmp_path):
    log = tmp_path / "q.jsonl"
    env = {"DBROUTER_LOG": str(log)}
    run_cli("route", QUESTION, "--warehouse", str(built_kb["warehouse"]), env=env)
    run_cli("ask", QUESTION, "--warehouse", str(built_kb["warehouse"]), env=env, check=False)
    entries = _entries(log)
    assert [(e.source, e.tool) for e in entries] == [("cli", "route"), ("cli", "ask")]
    assert entries[0].question == QUESTION and entries[0].chosen == entries[0].ranking[0] and entries[0].seconds > 0
    assert entries[1].status in ("ok", "needs_llm")
    run_cli("route", QUESTION, "--no-log", "--warehouse", str(built_kb["warehouse"]), env=env)
    run_cli("route", QUESTION, "--warehouse", str(built_kb["warehouse"]), env={"DBROUTER_LOG": "off"})
    assert len(_entries(log)) == 2


def test_mcp_tool_calls_are_logged_failed_or_not(built_kb, tmp_path, monkeypatch):
    from dbrouter.errors import DbrouterError
    from dbrouter.routing.route import RouteResult
    from dbrouter.serve.mcp import Tools

    log = tmp_path / "mcp.jsonl"
    monkeypatch.setenv("DBROUTER_LOG", str(log))
    tools = Tools(built_kb["warehouse"])
    try:
        tools.logged("route", None, lambda: tools.routed(QUESTION, 3), QUESTION, entry_of=RouteResult.log_entry)
        tools.logged("run_sql", None, lambda: tools.run_sql("concert_singer", "select count(*) from singer"), None,
                     "concert_singer", "select count(*) from singer")
        with pytest.raises(DbrouterError):
            tools.logged("run_sql", None, lambda: tools.run_sql("concert_singer", "drop table singer"), None,
                         "concert_singer", "drop table singer")
    finally:
        tools.close()
    entries = _entries(log)
    assert [(e.tool, e.status) for e in entries] == [("route", "ok"), ("run_sql", "ok"), ("run_sql", "error")]
    assert entries[0].ranking and entries[2].sql == "drop table singer" and "DROP" in entries[2].error


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[dict] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append(dict(attrs))

    def handle_data(self, data):
        self.text.append(data)


def test_report_sums_the_log_as_text_and_a_self_contained_page(tmp_path):
    log = tmp_path / "q.jsonl"
    for i, (db, status, abstained) in enumerate([("singer", "ok", False)] * 3 + [("college_3", "ok", False)]
                                                 + [(None, "abstained", True)] * 2):
        append(log, LogEntry("mcp", "route", f"question {i if db else 'x'} <b>", ranking=[db] if db else [],
                             chosen=db, status=status, abstained=abstained, seconds=0.1 * (i + 1)))
    with open(log, "a") as fh:
        fh.write("{torn line\n")  # a torn or edited line is skipped, not fatal
    html = tmp_path / "r.html"
    proc = run_cli("report", "--log", str(log), "--html", str(html))
    assert "6 calls" in proc.stdout and "abstention rate 33.3%" in proc.stdout
    assert proc.stdout.index("singer") < proc.stdout.index("college_3")  # by traffic
    assert "question x <b>" in proc.stdout.split("unanswered")[1]
    page = _Page()
    page.feed(html.read_text())
    assert "script" not in page.tags and not any(a.get("src") or a.get("href") for a in page.attrs)  # self-contained
    assert page.tags.count("svg") == 3 and page.tags.count("rect") == 2 + 1 + 6  # dbs, tools, slowest calls
    assert "question x <b>" in "".join(page.text)  # escaped, shown as text
    missing = run_cli("report", "--log", str(tmp_path / "none.jsonl"), check=False)
    assert missing.returncode != 0 and "no query log" in missing.stderr


@pytest.mark.slow
def test_a_verified_example_is_routed_with_after_the_next_build(built_kb, tmp_path):
    kb = copy_built_kb(built_kb, tmp_path / "kb")
    warehouse, sources = kb["warehouse"], kb["sources"]
    question = "Which rooms of the stadium hold the most seats for the choir rehearsal?"
    before = json.loads(run_cli("route", question, "--json", "--no-log", "--warehouse", str(warehouse)).stdout)
    assert before["ranking"][0]["db_id"] != "orchestra"
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"status": "ok", "db_id": "orchestra", "question": question,
                                  "sql": "SELECT count(*) FROM orchestra"}))
    bad = run_cli("examples", "add", "--db", "concert_singer", "--question", question, "--sql", "delete from stadium",
                  "--warehouse", str(warehouse), check=False)
    assert bad.returncode != 0 and "refused" in bad.stderr
    unknown = run_cli("examples", "add", "--db", "concert_singr", "--question", question, "--sql", "select 1",
                      "--warehouse", str(warehouse), check=False)
    assert unknown.returncode != 0 and "did you mean concert_singer" in unknown.stderr
    run_cli("examples", "add", "--from-answer", str(answer), "--warehouse", str(warehouse))
    log = tmp_path / "q.jsonl"
    run_cli("route", QUESTION, "--warehouse", str(warehouse), env={"DBROUTER_LOG": str(log)})
    built = run_cli("build", "--sources", str(sources), "--warehouse", str(warehouse), env={"DBROUTER_LOG": str(log)})
    assert "query log: 1 new entries" in built.stderr
    after = json.loads(run_cli("route", question, "--json", "--no-log", "--warehouse", str(warehouse)).stdout)
    assert after["ranking"][0]["db_id"] == "orchestra"  # the verified example question routes to its database
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:  # the log is in the warehouse for SQL and BI
        rows = con.execute("select source, tool, question, chosen_db_id from kb_query_log").fetchall()
    assert rows == [("cli", "route", QUESTION, _entries(log)[0].chosen)]
    report = run_cli("report", "--from-kb", "--warehouse", str(warehouse)).stdout
    assert report.startswith("1 calls (route 1)") and QUESTION in report


def test_serve_logs_the_statements_that_route(built_kb, tmp_path):
    import psycopg

    from dbrouter.serve.server import ServeConfig, start_in_thread, stop

    log = tmp_path / "serve.jsonl"
    server, _ = start_in_thread(ServeConfig(built_kb["warehouse"], "127.0.0.1", 0, query_log=log))
    try:
        with psycopg.connect(host="127.0.0.1", port=server.server_address[1], user="bi_tool", dbname="kb",
                             connect_timeout=10, autocommit=True) as con:
            chosen = con.execute("select route_query(%s)", [QUESTION]).fetchall()[0][0]
            ranked = [r[0] for r in con.execute(f"select db_id from route_query_ranked('{QUESTION}', 3)").fetchall()]
            con.execute("select count(*) from kb_databases").fetchall()  # routes nothing: not logged
            # a routing call in a comment routes nothing either: the log follows DuckDB's parse, so a
            # client cannot forge entries for the report (hardening review)
            con.execute("select /* route_query('forged question') */ 'singer' as db_id").fetchall()
            with pytest.raises(psycopg.Error):
                con.execute("select * from route_query_ranked('x', 'not a number')")
    finally:
        stop(server)
    entries = _entries(log)
    assert [(e.source, e.tool, e.user, e.status) for e in entries] == [
        ("serve", "route_query", "bi_tool", "ok"), ("serve", "route_query_ranked", "bi_tool", "ok"),
        ("serve", "route_query_ranked", "bi_tool", "error")]
    assert entries[0].question == QUESTION and entries[0].chosen == chosen
    assert entries[1].ranking == ranked and entries[2].error


def test_the_html_report_renders_in_a_real_headless_browser(tmp_path):
    """Debian's chromium (installed by `make test`) lays the page out: every bar has a width in
    proportion to its value and the tables show the log's rows. The page itself runs no script (its
    CSP forbids it); the test measures a copy with a measuring script added."""
    import subprocess

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed: `make test` installs Debian's chromium package")
    log = tmp_path / "q.jsonl"
    for db, n in (("singer", 4), ("college_3", 2)):
        for i in range(n):
            append(log, LogEntry("cli", "route", f"{db} question {i}", ranking=[db], chosen=db, seconds=0.05 * (i + 1)))
    html = tmp_path / "r.html"
    run_cli("report", "--log", str(log), "--html", str(html))
    page = html.read_text()
    assert "<script" not in page
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace('<meta http-equiv="Content-Security-Policy"', '<meta name="was-csp"').replace(
        "</body>", "<script>document.body.setAttribute('data-bars', JSON.stringify([...document.querySelectorAll("
                   "'svg')[0].querySelectorAll('rect.bar')].map(r => Math.round(r.getBoundingClientRect().width))));"
                   "document.body.setAttribute('data-rows', document.querySelectorAll('#slowest tr').length);"
                   "</script></body>"))
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", probe.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    bars = json.loads(re.search(r'data-bars="([^"]*)"', proc.stdout).group(1).replace("&quot;", '"'))
    assert len(bars) == 2 and bars[0] > 0 and abs(bars[0] / bars[1] - 2.0) < 0.1  # 4 calls vs 2: twice as wide
    assert re.search(r'data-rows="(\d+)"', proc.stdout).group(1) == "7"  # header + 6 slowest calls
