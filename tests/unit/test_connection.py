"""dbrouter.connection.entry: the name dbrouter's functions call an entry point by on a connection."""

from __future__ import annotations

import gc

import duckdb

from dbrouter.connection import _PATHS, entry, record_route_path


def test_an_unrecorded_connection_gets_the_plain_name():
    con = duckdb.connect()
    assert entry(con, "route_query_json") == "route_query_json"
    assert entry(object(), "retrieve_examples") == "retrieve_examples"  # cannot be weakly referenced


def test_a_recorded_connection_gets_its_paths_name_and_its_cursors_do_not():
    con = duckdb.connect()
    record_route_path(con, "sql")
    assert entry(con, "route_shortlist") == "route_shortlist_sql"
    cur = con.cursor()  # a cursor is a connection of its own: its temp macros, its record
    assert entry(cur, "route_shortlist") == "route_shortlist"
    record_route_path(cur, "udf")
    assert entry(cur, "route_shortlist") == "route_shortlist_udf"


def test_a_dropped_connection_leaves_the_record():
    con = duckdb.connect()
    record_route_path(con, "udf")
    before = len(_PATHS)
    con.close()
    del con
    gc.collect()
    assert len(_PATHS) == before - 1
