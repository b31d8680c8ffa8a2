"""Schema linking over a real KB (the demo, hash embedder): the retrieve_columns table macro,
lookup by name, the schema rendering and the LLM-free linker."""

from __future__ import annotations

import pytest

from dbrouter.errors import DbrouterError
from dbrouter.linking.columns import all_columns, lookup_columns, render_schema, retrieve_columns, table_names
from dbrouter.linking.linker import link_schema
from tests.profiling import scanned_rows, table_scans


def test_retrieve_columns_ranks_excludes_and_limits(kb_con):
    top = retrieve_columns(kb_con, "How old is each singer?", "concert_singer", k=5)
    assert len(top) == 5 and [c.score for c in top] == sorted((c.score for c in top), reverse=True)
    assert {c.column.table for c in top} <= set(table_names(kb_con, "concert_singer"))
    seen = [top[0].column.name.upper(), top[1].column.name]  # exclusion is case-insensitive
    rest = retrieve_columns(kb_con, "How old is each singer?", "concert_singer", k=3, exclude=seen)
    assert [c.column.name for c in rest] == [c.column.name for c in top[2:5]]
    every = retrieve_columns(kb_con, "singer", "concert_singer", k=10_000)
    assert len(every) == len(all_columns(kb_con, "concert_singer"))


def test_retrieve_columns_bad_input(kb_con):
    assert retrieve_columns(kb_con, "", "concert_singer") == []
    assert retrieve_columns(kb_con, None, "concert_singer") == []
    assert retrieve_columns(kb_con, "x' ; drop table kb_columns; --", "concert_singer", k=2)  # a parameter, not SQL
    with pytest.raises(DbrouterError, match="concert_singer"):
        retrieve_columns(kb_con, "singers", "concert_singr")


def test_sql_table_macro_is_callable_from_plain_sql(kb_con):
    rows = kb_con.execute("select rank, table_name, column_name from retrieve_columns('stadium capacity', "
                          "'concert_singer', k := 2, exclude := ['stadium.Capacity'])").fetchall()
    assert [r[0] for r in rows] == [1, 2] and ("stadium", "Capacity") not in [(r[1], r[2]) for r in rows]


def test_lookup_and_render(kb_con):
    found, unknown = lookup_columns(kb_con, "concert_singer", ["SINGER.age", "`singer`.`Name`",
                                                                "concert_singer.stadium.Capacity", "nope.x", "age"])
    assert [c.name for c in found] == ["singer.Age", "singer.Name", "stadium.Capacity"]
    assert unknown == ["nope.x", "age"]
    text = render_schema(kb_con, "concert_singer", found)
    assert text.splitlines()[0] == "[DB_ID] concert_singer"
    assert "# Table: singer" in text and "(Age: " in text and "examples: [" in text
    assert "[Foreign keys]" not in text  # singer and stadium are not joined directly


def test_link_schema_links_a_joinable_set(kb_con):
    linked = link_schema(kb_con, "Show the names of singers who performed in a concert in 2014", "concert_singer")
    assert linked.method == "retrieval" and linked.columns
    names = set(linked.names)
    assert len(names) == len(linked.names)  # no duplicates
    tables = set(linked.tables)
    if {"singer", "concert"} <= tables:
        assert {"singer_in_concert.Singer_ID", "singer_in_concert.concert_ID"} <= names
    again = link_schema(kb_con, "Show the names of singers who performed in a concert in 2014", "concert_singer")
    assert again.names == linked.names  # deterministic
    with pytest.raises(DbrouterError, match="empty"):
        link_schema(kb_con, "  ", "concert_singer")


def test_link_schema_over_budget_chooses_tables_first(kb_con):
    question = "Show the names of singers who performed in a concert in 2014"
    unbounded = link_schema(kb_con, question, "concert_singer", max_columns=None)
    assert not any("tables chosen first" in n for n in unbounded.notes)
    budget = len(unbounded.names) - 1  # the selection does not fit
    assert budget >= 4
    linked = link_schema(kb_con, question, "concert_singer", max_columns=budget)
    assert 0 < len(linked.names) <= budget and len(set(linked.names)) == len(linked.names)
    assert any("tables chosen first" in n for n in linked.notes)
    assert len(linked.tables) <= max(1, budget // 4)  # room for a few columns per table
    fits = link_schema(kb_con, question, "concert_singer", max_columns=len(unbounded.names))
    assert fits.names == unbounded.names  # a selection that fits, on a database with examples, is kept


def test_link_schema_without_examples_fills_the_budget_tables_first(kb_con):
    from dbrouter.linking.features import load_signals

    question = "Show the names of singers who performed in a concert in 2014"
    sig = load_signals(kb_con, "concert_singer")
    sig.examples, sig.example_vectors = [], sig.example_vectors[:0]  # a warehouse nobody wrote examples for
    n_columns = len(sig.names)
    linked = link_schema(kb_con, question, "concert_singer", signals=sig, max_columns=8)
    assert n_columns > 8 and len(linked.tables) <= 2
    in_chosen = sum(1 for t, *_r in sig.columns if t in linked.tables)
    assert len(linked.names) == min(8, in_chosen)  # the budget is filled from the chosen tables
    assert any("0 stored examples" in n for n in linked.notes)


@pytest.mark.parametrize("bad", [0, -1, True, "40"])
def test_ask_refuses_a_bad_column_budget_before_any_work(kb_con, bad):
    from dbrouter.answer.ask import ask

    with pytest.raises(DbrouterError, match="max-columns"):
        ask(kb_con, "How many singers are there?", "concert_singer", max_columns=bad)


@pytest.mark.parametrize("path, table", [("udf", "kb_document_embeddings"), ("sql", "kb_static_document_embeddings")])
def test_retrieve_columns_reads_only_that_databases_documents(kb_con, tmp_path, path, table):
    """The scan filters on the database: it used to read every database's column vectors (0.22x
    the time at 10,000 databases with the filter)."""
    ours = kb_con.execute(f"select count(*) from {table} where db_id = 'concert_singer'").fetchall()[0][0]
    every = kb_con.execute(f"select count(*) from {table}").fetchall()[0][0]
    assert 0 < ours < every
    rows = scanned_rows(kb_con, f"select * from retrieve_columns_{path}(?, 'concert_singer', 5, null)",
                        ["How old is each singer?"], table, tmp_path / "profile.json")
    assert rows and max(rows) <= ours


def test_linking_signals_read_only_that_databases_vectors(kb_con, tmp_path):
    """load_signals reads one database's columns, tables, examples and statements with their
    vectors: each scan of kb_document_embeddings passes on only that database's documents (it
    read every database's, 150 ms a call at 10,000 databases)."""
    from dbrouter.linking.features import load_signals

    ours = kb_con.execute("select count(*) from kb_document_embeddings where db_id = 'concert_singer'").fetchall()[0][0]
    every = kb_con.execute("select count(*) from kb_document_embeddings").fetchall()[0][0]
    assert 0 < ours < every
    out = tmp_path / "profile.json"
    scanned: list[int] = []

    class Profiled:  # the connection, with each statement's scans of the documents recorded
        def execute(self, sql, params=None):
            result = kb_con.execute(sql, params)

            class Rows:
                def fetchall(self_inner):
                    rows = result.fetchall()
                    scanned.extend(table_scans(out, "kb_document_embeddings"))
                    return rows
            return Rows()

    kb_con.execute("PRAGMA enable_profiling='json'")
    kb_con.execute(f"SET profiling_output='{out}'")
    try:
        sig = load_signals(Profiled(), "concert_singer")
    finally:
        kb_con.execute("PRAGMA disable_profiling")
    assert sig.schema_columns and len(sig.column_vectors) == len(sig.schema_columns)
    assert len(scanned) >= 2 and max(scanned) <= ours, scanned
