"""Managing the feedback loop (issue 34): examples and statements added, listed and removed, also
while another process (a server) holds the warehouse, and an example's SQL checked at `add`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import copy_built_kb, run_cli

QUESTION = "Which singers hold French citizenship according to our records?"


@pytest.fixture()
def kb(built_kb, tmp_path) -> dict:
    return copy_built_kb(built_kb, tmp_path / "kb")


def _hold_open(warehouse: Path) -> subprocess.Popen:
    """A reader (as `dbrouter serve` is) holding the warehouse until killed."""
    proc = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(warehouse)!r}, "
                             "read_only=True); print('open', flush=True); time.sleep(120)"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc


def _list(kb: dict, *args: str) -> list[dict]:
    return json.loads(run_cli("examples", "list", "--json", "--warehouse", str(kb["warehouse"]), *args).stdout)


def test_an_example_whose_sql_does_not_run_is_refused_at_add(kb):
    wh = str(kb["warehouse"])
    typo = run_cli("examples", "add", "--warehouse", wh, "--db", "singer", "--question", QUESTION,
                   "--sql", "select Name from singers where Citizenship = 'France'", check=False)
    assert typo.returncode == 2 and "does not run on singer" in typo.stderr and "no such table: singers" in typo.stderr
    # college_3 comes from a schema file: no data to run on, its tables are checked instead
    schema_only = run_cli("examples", "add", "--warehouse", wh, "--db", "college_3", "--question", "How many courses?",
                          "--sql", "select count(*) from coursez", check=False)
    assert schema_only.returncode == 2 and "table coursez is not a table of database college_3" in schema_only.stderr
    assert not any(e["text"] == QUESTION for e in _list(kb))  # nothing stored
    ok = run_cli("examples", "add", "--warehouse", wh, "--db", "college_3", "--question", "How many courses?",
                 "--sql", "select count(*) from course")
    assert "its tables are the database's" in ok.stderr


def test_examples_added_and_removed_while_a_server_holds_the_warehouse_reach_the_next_build(kb):
    wh, sources = str(kb["warehouse"]), str(kb["sources"])
    before = json.loads(run_cli("route", QUESTION, "--json", "--no-log", "--warehouse", wh).stdout)
    assert before["ranking"][0]["db_id"] != "orchestra"
    server = _hold_open(kb["warehouse"])
    try:
        added = run_cli("examples", "add", "--warehouse", wh, "--db", "orchestra", "--question", QUESTION,
                        "--sql", "SELECT count(*) FROM orchestra")
        assert f"process {server.pid} has it open" in added.stderr and "kb.changes.jsonl" in added.stderr
        pending = [e for e in _list(kb, "--db", "orchestra") if e["pending"]]
        assert [e["text"] for e in pending] == [QUESTION]
    finally:
        server.kill()
        server.wait()
    built = run_cli("build", "--sources", sources, "--warehouse", wh)
    assert "changes: 1 from" in built.stderr
    after = json.loads(run_cli("route", QUESTION, "--json", "--no-log", "--warehouse", wh).stdout)
    assert after["ranking"][0]["db_id"] == "orchestra"  # the stored question routes to its database
    # and so does a close paraphrase, though one example is too few for the KB to trust its examples
    paraphrase = QUESTION.replace("according to our records", "according to the records we keep")
    para = json.loads(run_cli("route", paraphrase, "--json", "--no-log", "--warehouse", wh).stdout)
    assert para["ranking"][0]["db_id"] == "orchestra" and para["ranking"][0]["evidence"]["example_match"]
    import duckdb

    with duckdb.connect(wh, read_only=True) as con:
        assert con.execute("select examples_trusted from kb_routing_calibration").fetchone()[0] == 0
        sql_top = con.execute("select db_id, evidence->>'example_match' from route_query_ranked_sql(?, 1)",
                              [paraphrase]).fetchone()
    assert sql_top == ("orchestra", "true")  # the pure-SQL path too (its own, higher similarity bar)
    mine = [e for e in _list(kb, "--question", QUESTION.upper())]  # case is ignored
    assert len(mine) == 1 and not mine[0]["pending"] and mine[0]["origin"].startswith("cli:")
    server = _hold_open(kb["warehouse"])
    try:
        run_cli("examples", "remove", "--warehouse", wh, "--id", mine[0]["item_id"])
        assert _list(kb, "--question", QUESTION) == []  # a pending removal hides it already
    finally:
        server.kill()
        server.wait()
    run_cli("build", "--sources", sources, "--warehouse", wh)
    gone = json.loads(run_cli("route", QUESTION, "--json", "--no-log", "--warehouse", wh).stdout)
    assert gone["ranking"][0]["db_id"] == before["ranking"][0]["db_id"]
    again = run_cli("build", "--sources", sources, "--warehouse", wh)
    assert "changes:" not in again.stderr  # each change is applied once


def test_a_direct_write_never_overtakes_a_recorded_change(kb):
    """Recorded add (server running), then a direct remove (server gone): the remove wins."""
    wh = str(kb["warehouse"])
    server = _hold_open(kb["warehouse"])
    try:
        run_cli("statements", "add", "--warehouse", wh, "--db", "singer", "stars refers to singer.Name")
    finally:
        server.kill()
        server.wait()
    removed = run_cli("statements", "remove", "--warehouse", wh, "--db", "singer")
    assert "come from a sources file and stay" in removed.stderr and "1 statements removed" in removed.stderr
    run_cli("build", "--sources", str(kb["sources"]), "--warehouse", wh)
    listed = json.loads(run_cli("statements", "list", "--ids", "--json", "--db", "singer", "--warehouse", wh).stdout)
    assert [s["text"] for s in listed] == ["'rich singers' refers to singer.Net_Worth_Millions"]


def test_a_sources_file_example_is_removed_from_its_file_not_here(kb):
    wh = str(kb["warehouse"])
    file_one = next(e for e in _list(kb, "--db", "singer") if not e["pending"])
    refused = run_cli("examples", "remove", "--warehouse", wh, "--id", file_one["item_id"], check=False)
    assert refused.returncode == 2 and "come from a sources file (examples.jsonl" in refused.stderr
    nothing = run_cli("examples", "remove", "--warehouse", wh, check=False)
    assert nothing.returncode == 2 and "--id ID" in nothing.stderr
    unknown = run_cli("examples", "remove", "--warehouse", wh, "--id", "feedface", check=False)
    assert unknown.returncode == 2 and "no example with id feedface" in unknown.stderr
