"""The changes journal (dbrouter/kb/changes.py): what it records, reads back and applies."""

import duckdb

from dbrouter.kb.changes import Change, append, changes_path, item_id, load_into, read
from dbrouter.kb.tables import ensure_tables


def test_changes_are_read_back_in_order_and_a_partial_or_bad_line_is_not_a_change(tmp_path):
    wh = tmp_path / "kb.duckdb"
    path = append(wh, Change("add_example", db_id="a", question="q?", sql="select 1"))
    append(wh, Change("remove_examples", ids=("x", "y")))
    assert path == changes_path(wh) == tmp_path / "kb.changes.jsonl"
    with path.open("ab") as f:
        f.write(b'{"op": "drop_everything"}\nnot json\n{"op": "add_statement", "db_id": "a"')  # last: no newline yet
    changes, offset, bad = read(path)
    assert [c.op for c in changes] == ["add_example", "remove_examples"] and changes[1].ids == ("x", "y")
    assert bad == 2 and offset < path.stat().st_size  # the partial line is left for the next read
    with path.open("ab") as f:
        f.write(b', "statement": "s"}\n')
    more, end, bad = read(path, offset)
    assert [c.op for c in more] == ["add_statement"] and end == path.stat().st_size and bad == 0


def test_load_into_applies_each_change_once_and_ids_match_the_models(tmp_path):
    wh = tmp_path / "kb.duckdb"
    con = duckdb.connect(str(wh))
    ensure_tables(con)
    append(wh, Change("add_example", db_id="a", question=" How many? ", sql="select 1"))
    append(wh, Change("add_example", db_id="a", question="", sql="select 1"))  # refused, not fatal
    done = load_into(con, changes_path(wh))
    assert (done.changes, done.rows, len(done.refused)) == (1, 1, 1)
    # the id dbt gives it: md5(db_id \0 question \0 sql) of the stored (trimmed) text
    stored = con.execute("select md5(db_id || chr(0) || question || chr(0) || sql_text) "
                         "from dbrouter_user.examples").fetchall()
    assert stored == [(item_id("example", "a", "How many?", "select 1"),)]
    append(wh, Change("remove_examples", ids=(stored[0][0],)))
    assert load_into(con, changes_path(wh)).rows == 1
    assert load_into(con, changes_path(wh)).changes == 0  # nothing new
    assert con.execute("select count(*) from dbrouter_user.examples").fetchone()[0] == 0
