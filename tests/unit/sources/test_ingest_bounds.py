"""Ingest is bounded in time (issue 22 finding 4): a view that never ends in a SQLite or DuckDB
source is stopped, keeps its columns and is reported; the rest of the database is read; a server
that accepts TCP but never answers fails within the connect timeout."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time

import duckdb
import pytest

from dbrouter.errors import SourcesConfigError
from dbrouter.sources.base import QueryClock, SourceSpec
from dbrouter.sources.duckdb import read_duckdb
from dbrouter.sources.sqlite import read_sqlite

FOREVER = ("create table t (a int, b text); insert into t values (1, 'x');"
           "create view forever as with recursive r(i) as (select 1 union all select i + 1 from r) "
           "select i, 'v' || i as label from r;")


def _sqlite(path):
    con = sqlite3.connect(path)
    con.executescript(FOREVER)
    con.commit()
    con.close()
    return read_sqlite


def _duckdb(path):
    con = duckdb.connect(str(path))
    con.execute(FOREVER)
    con.close()
    return read_duckdb


@pytest.mark.parametrize("kind, make", [("sqlite", _sqlite), ("duckdb", _duckdb)])
def test_a_view_that_never_ends_is_stopped_and_the_rest_is_read(kind, make, tmp_path, monkeypatch):
    monkeypatch.setenv("DBROUTER_INGEST_STATEMENT_TIMEOUT", "1")
    path = tmp_path / f"hang.{kind}"
    reader = make(path)
    started = time.monotonic()
    snap = reader(SourceSpec(kind, path), "hang", 5, 50)
    assert time.monotonic() - started < 10
    tables = {t.name: t for t in snap.tables}
    assert [c.name for c in tables["forever"].columns] == ["i", "label"] and tables["forever"].row_count is None
    assert tables["t"].row_count == 1 and tables["t"].columns[1].samples == ["x"]
    assert any("stopped after 1 s (DBROUTER_INGEST_STATEMENT_TIMEOUT)" in i.message and i.object_name == "forever"
               for i in snap.issues), snap.issues


def test_the_database_budget_leaves_the_rest_without_samples(tmp_path, monkeypatch):
    monkeypatch.setenv("DBROUTER_INGEST_STATEMENT_TIMEOUT", "1")
    monkeypatch.setenv("DBROUTER_INGEST_DATABASE_TIMEOUT", "1.5")
    path = tmp_path / "two.sqlite"
    con = sqlite3.connect(path)
    con.executescript(FOREVER.replace("forever", "a_forever") + FOREVER.split(";", 2)[2].replace("forever", "b_forever"))
    con.commit()
    con.close()
    snap = read_sqlite(SourceSpec("sqlite", path), "two", 5, 50)
    assert {t.name for t in snap.tables} == {"a_forever", "b_forever", "t"}
    assert all(not c.samples for t in snap.tables for c in t.columns)
    assert any(i.object_name is None and "DBROUTER_INGEST_DATABASE_TIMEOUT" in i.message for i in snap.issues)


def test_bad_budget_settings_are_errors(monkeypatch):
    monkeypatch.setenv("DBROUTER_INGEST_STATEMENT_TIMEOUT", "soon")
    with pytest.raises(SourcesConfigError, match="DBROUTER_INGEST_STATEMENT_TIMEOUT must be a positive number"):
        QueryClock()


def test_a_server_that_never_answers_fails_within_the_connect_timeout(monkeypatch):
    """A tarpit: accepts TCP, never sends a byte (PostgreSQL ingest hung 130 s, MySQL 10+ minutes)."""
    from dbrouter.sources import url as url_source
    from dbrouter.sources.url import ServerSource, read_server

    monkeypatch.setattr(url_source, "CONNECT_TIMEOUT_S", 2)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        started = time.monotonic()
        snaps, issues = read_server(ServerSource(url=f"postgresql+psycopg://reader@127.0.0.1:{port}/sales"), 3, 50)
        assert time.monotonic() - started < 15
        assert not snaps and issues and "timeout" in " ".join(i.message for i in issues).lower()
    finally:
        stop.set()
        thread.join()
        for s in held:
            s.close()
        listener.close()
