"""Shared source parts: labels, foreign-key checks, the registry."""



import pytest

from dbrouter.sources.base import ColumnInfo, DatabaseSnapshot, ForeignKey, TableInfo, check_foreign_keys, label_of


def test_label_of():
    assert label_of("HomeTown_ID") == "home town id"
    assert label_of("song_release_year") == "song release year"


def test_check_foreign_keys_drops_dangling_edges_with_issue():
    snap = DatabaseSnapshot("db", "sqlite", "x", tables=[
        TableInfo("a", "a", [ColumnInfo("b_id", "b id", 1, "int")])],
        foreign_keys=[ForeignKey("a", "b_id", "b", "id"), ForeignKey("A", "B_ID", "a", "b_id")])
    check_foreign_keys(snap)
    assert [(f.table, f.ref_table) for f in snap.foreign_keys] == [("A", "a")]
    assert "missing table 'b'" in snap.issues[0].message and snap.issues[0].db_id == "db"


def test_every_source_module_is_one_registered_type_implementing_the_protocol():
    """One module per type, listed once in the registry: a new module that is not registered (or a
    registered class missing parse/read/fingerprint/target/run) fails here: a new type runs SQL by
    its own run, with no second registry to edit."""
    import importlib
    import inspect
    import pkgutil

    import dbrouter.sources
    from dbrouter.sources.base import SourceType
    from dbrouter.sources.registry import SOURCE_TYPES, source_type

    modules = {m.name for m in pkgutil.iter_modules(dbrouter.sources.__path__)} - {"base", "config", "registry", "watchdog"}
    assert modules == set(SOURCE_TYPES)
    for name, kind in SOURCE_TYPES.items():
        assert type(kind).__module__ == f"dbrouter.sources.{name}" and kind.name == name
        for method in ("parse", "read", "fingerprint", "target", "run"):
            assert inspect.signature(getattr(kind, method)).parameters.keys() == \
                {p for p in inspect.signature(getattr(SourceType, method)).parameters if p != "self"}
        importlib.import_module(f"dbrouter.sources.{name}")
    with pytest.raises(Exception, match="unknown source type 'bigquery'; known: sqlite, duckdb"):
        source_type("bigquery")


def test_targets_say_where_sql_runs_or_why_it_cannot(tmp_path):
    from dbrouter.sources.base import NoDataSource
    from dbrouter.sources.registry import source_type

    db = tmp_path / "x.sqlite"
    db.write_bytes(b"")
    assert source_type("sqlite").target("x", str(db)).path == db
    with pytest.raises(NoDataSource, match="no longer exists"):
        source_type("duckdb").target("y", str(tmp_path / "gone.duckdb"))
    with pytest.raises(NoDataSource, match="schema file"):
        source_type("schema_json").target("z", "s.json")
    with pytest.raises(NoDataSource, match="not yet on Snowflake") as info:
        source_type("snowflake").target("w", "snowflake://acct/SALES")
    assert info.value.dialect == "snowflake"  # its SQL is still written in Snowflake's dialect
    with pytest.raises(NoDataSource, match="built by an older dbrouter"):
        source_type("url").target("w", "url:postgresql")
    server = source_type("url").target("s", "postgresql+psycopg://r:${PW}@h:5432/shop search_path billing")
    assert (server.url, server.schema, server.dialect) == ("postgresql+psycopg://r:${PW}@h:5432/shop", "billing",
                                                           "postgres")
    assert source_type("url").target("m", "mysql+pymysql://r@h/shop").dialect == "mysql"
