"""type: duckdb - reading, the locked-down connection (issue 22 finding 1), fingerprint."""

import json

import duckdb

from dbrouter.sources.base import SourceSpec
from dbrouter.sources.duckdb import fingerprint_duckdb, read_duckdb


def test_read_duckdb_reads_comments_and_constraints(tmp_path):
    import duckdb

    path = tmp_path / "d.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table store (store_id integer primary key, name varchar)")
    con.execute("create table sale (sale_id integer primary key, store_id integer references store(store_id), amount double)")
    con.execute("comment on table store is 'physical shops'")
    con.execute("comment on column sale.amount is 'gross amount in euro'")
    con.execute("insert into store values (1, 'Main'), (2, 'Harbour')")
    con.close()
    snap = read_duckdb(SourceSpec("duckdb", path), "d", 5, 60)
    tables = {t.name: t for t in snap.tables}
    assert tables["store"].description == "physical shops"
    amount = next(c for c in tables["sale"].columns if c.name == "amount")
    assert amount.description == "gross amount in euro"
    assert set(next(c for c in tables["store"].columns if c.name == "name").samples) == {"Main", "Harbour"}
    assert [(f.table, f.ref_table) for f in snap.foreign_keys] == [("sale", "store")]


def test_duckdb_source_is_opened_read_only(tmp_path):
    import duckdb

    path = tmp_path / "d.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table t (id integer)")
    con.close()
    before = path.read_bytes()
    read_duckdb(SourceSpec("duckdb", path), "d", 5, 60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.duckdb"] and path.read_bytes() == before


def make_hostile_duckdb(path, secret_file):
    """The attack of issue 22, finding 1: views that read a local file and the process environment."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("create table singer (name varchar)")
    con.execute("insert into singer values ('Joe')")
    con.execute(f"create view leak_file as select content from read_text('{secret_file}')")
    con.execute("create view leak_environ as select content from read_text('/proc/self/environ')")
    con.execute("create view leak_blob as select content::varchar as content from read_blob('/proc/self/environ')")
    con.close()


def test_hostile_duckdb_source_reads_no_file_and_no_environment(tmp_path, monkeypatch):
    """A view over read_text()/read_blob() must not put a file's content or a secret of the
    build's environment into the snapshot (kb_columns.sample_values), the refresh fingerprint or
    a query's rows: sources open with external access off and the configuration locked."""
    from dbrouter.kb.ingest import collect_raw_rows
    from dbrouter.sources.base import SourcesConfig
    from dbrouter.sources.duckdb import fingerprint_duckdb, run_duckdb

    secret_file = tmp_path / "secret.txt"
    secret_file.write_text("TOPSECRET-file-content")
    monkeypatch.setenv("DBROUTER_LLM_API_KEY", "sk-TOPSECRET-env")
    path = tmp_path / "hostile.duckdb"
    make_hostile_duckdb(path, secret_file)
    config = SourcesConfig(databases=[SourceSpec("duckdb", path)])
    snaps, _, _, rows = collect_raw_rows(config)
    dumped = json.dumps(rows, default=str)
    assert "TOPSECRET" not in dumped
    assert [t.name for t in snaps[0].tables] == ["singer"]  # the rest of the database is kept
    skipped = {i.object_name: i.message for i in snaps[0].issues}
    assert set(skipped) == {"leak_file", "leak_environ", "leak_blob"}
    assert all("file and network access off" in m for m in skipped.values())
    assert fingerprint_duckdb(path)  # catalog only: works, reads no file
    for view in ("leak_file", "leak_environ", "leak_blob"):
        result = run_duckdb(path, f"select * from {view}", 5, 10)
        assert result.error and not result.rows and "TOPSECRET" not in str(result.error)
    result = run_duckdb(path, "select current_setting('enable_external_access')", 5, 10)
    assert result.rows == [(False,)]



def test_duckdb_fingerprint_is_stable_blind_to_rows_and_sees_types_and_comments(tmp_path):
    path = tmp_path / "sales.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table item(id int primary key, label varchar, price double)")
    con.execute("insert into item values (1, 'pen', 1.5)")
    con.close()
    first = fingerprint_duckdb(path)
    assert fingerprint_duckdb(path) == first
    prints = [first]
    for sql in ("insert into item values (2, 'cup', 3.0); delete from item where id = 1",
                "alter table item alter column price type decimal(10, 2)",
                "comment on column item.label is 'what it is'",
                "create view cheap as select * from item where price < 2"):
        con = duckdb.connect(str(path))
        con.execute(sql)
        con.close()
        prints.append(fingerprint_duckdb(path))
    assert prints[1] == first, "a row change altered the fingerprint"
    assert len(set(prints[1:])) == 4, "a type change, a comment or a view went unnoticed"
