"""Safe execution of generated SQL: refusals, read-only connections, timeout, row cap, observations, keys."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from dbrouter.errors import DbrouterError
from dbrouter.execute.runners import execute, target_for
from dbrouter.query.guard import UnsafeSQL, check_read_only, has_order_by
from dbrouter.query.results import QueryResult, format_observation, result_key
from dbrouter.sources.base import NoDataSource, Target
from dbrouter.sources.duckdb import run_duckdb
from dbrouter.sources.sqlite import run_sqlite

ROWS = 1200
DIALECTS = ["sqlite", "duckdb"]

# (SQL, word the refusal reason must name): refused in both dialects.
HOSTILE = [
    ("SELECT 1; SELECT 2", "multiple statements"),
    ("SELECT * FROM t; DROP TABLE t", "multiple statements"),
    ("INSERT INTO t VALUES (1, 'x')", "INSERT"),
    ("UPDATE t SET a = 1", "UPDATE"),
    ("DELETE FROM t", "DELETE"),
    ("MERGE INTO t USING t AS s ON t.a = s.a WHEN MATCHED THEN DELETE", "MERGE"),
    ("CREATE TABLE u AS SELECT 1", "CREATE"),
    ("CREATE VIEW v AS SELECT 1", "CREATE"),
    ("DROP TABLE t", "DROP"),
    ("ALTER TABLE t ADD COLUMN c INT", "ALTER"),
    ("TRUNCATE t", "TRUNCATE"),
    ("REPLACE INTO t VALUES (1, 'x')", "REPLACE"),
    ("WITH x AS (SELECT 1) DELETE FROM t", "DELETE"),
    ("WITH x AS (SELECT 1 AS a, 'b' AS b) INSERT INTO t SELECT * FROM x", "INSERT"),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE"),
    ("WITH u AS (UPDATE t SET a = 2 RETURNING a) SELECT * FROM u", "UPDATE"),
    ("SELECT * INTO u FROM t", "INTO"),
    ("PRAGMA journal_mode = WAL", "PRAGMA"),
    ("PRAGMA query_only = OFF", "PRAGMA"),
    ("ATTACH 'other.db' AS o", "ATTACH"),
    ("DETACH o", "DETACH"),
    ("DETACH DATABASE o", "DETACH"),
    ("COPY t TO 'out.csv'", "COPY"),
    ("INSTALL httpfs", "INSTALL"),
    ("LOAD httpfs", "LOAD"),
    ("EXPORT DATABASE 'dir'", "EXPORT"),
    ("IMPORT DATABASE 'dir'", "IMPORT"),
    ("SET threads = 1", "SET"),
    ("RESET threads", "RESET"),
    ("CALL pragma_version()", "CALL"),
    ("VACUUM", "VACUUM"),
    ("CHECKPOINT", "CHECKPOINT"),
    ("BEGIN", "BEGIN"),
    ("BEGIN TRANSACTION", "BEGIN"),
    ("COMMIT", "COMMIT"),
    ("ROLLBACK", "ROLLBACK"),
    ("CREATE SECRET s (TYPE s3)", "CREATE"),
    ("EXPLAIN SELECT 1", "EXPLAIN"),
    ("DESCRIBE t", "DESCRIBE"),
    ("SHOW TABLES", "SHOW"),
    ("SUMMARIZE t", "SUMMARIZE"),
    ("USE other", "USE"),
    ("ANALYZE", "ANALYZE"),
    ("VALUES (1)", "VALUES"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("SELECT * FROM read_csv_auto('x.csv')", "read_csv_auto"),
    ("SELECT * FROM read_parquet('x.parquet')", "read_parquet"),
    ("SELECT * FROM parquet_scan('x.parquet')", "parquet_scan"),
    ("SELECT * FROM read_json('x.json')", "read_json"),
    ("SELECT * FROM read_json_auto('x.json')", "read_json_auto"),
    ("SELECT * FROM read_ndjson_objects('x.json')", "read_ndjson_objects"),
    ("SELECT content FROM read_text('/etc/hostname')", "read_text"),
    ("SELECT * FROM read_blob('x')", "read_blob"),
    ("SELECT * FROM glob('/etc/*')", "glob"),
    ("SELECT * FROM sniff_csv('x.csv')", "sniff_csv"),
    ("SELECT * FROM iceberg_scan('x')", "iceberg_scan"),
    ("SELECT * FROM delta_scan('x')", "delta_scan"),
    ("SELECT * FROM sqlite_scan('x.db', 't')", "sqlite_scan"),
    ("SELECT * FROM sqlite_attach('x.db')", "sqlite_attach"),
    ("SELECT * FROM postgres_scan('dbname=x', 'public', 't')", "postgres_scan"),
    ("SELECT * FROM postgres_query('x', 'select 1')", "postgres_query"),
    ("SELECT * FROM mysql_scan('x', 't')", "mysql_scan"),
    ("SELECT * FROM query('DROP TABLE t')", "query"),
    ("SELECT * FROM query_table('t')", "query_table"),
    ("SELECT getenv('HOME')", "getenv"),
    ("SELECT load_extension('evil.so')", "load_extension"),
    ("SELECT readfile('/etc/passwd')", "readfile"),
    ("SELECT writefile('/tmp/x', 'y')", "writefile"),
    ("SELECT edit('x')", "edit"),
    ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
    ("SELECT * FROM fts_main_t.match_bm25(1, 'x')", "fts_main_t"),
    ("SELECT a FROM t WHERE fts_main_t.match_bm25(a, 'x') > 0", "fts_main_t"),
    ("SELECT http_get('http://example.com')", "http_get"),
    ("SELECT system('rm -rf /')", "system"),
    ("SELECT shell('ls')", "shell"),
    ("SELECT * FROM 'data.csv'", "data.csv"),
    ("FROM 'data.parquet'", "data.parquet"),
    ("SELECT * FROM t JOIN 'x.csv' USING (a)", "x.csv"),
    ("SELECT * FROM t, 'x.json'", "x.json"),
    ('SELECT * FROM "https://example.com/x.csv"', "https://example.com/x.csv"),
    ('SELECT * FROM "/etc/passwd"', "/etc/passwd"),
    ("", "empty"),
    ("   ;  ", "empty"),
    ("-- only a comment", "empty"),
    ("SELECT * FROM t WHERE", "cannot parse"),
    ("SELECT * FROM t WHERE a IN (DELETE FROM t RETURNING a)", "cannot parse"),
]

ALLOWED = [
    "SELECT a, b FROM t",
    "select * from t;",
    "SELECT a FROM t WHERE a < 3 ;  ",
    "WITH x AS (SELECT a FROM t WHERE a < 5) SELECT count(*) FROM x",
    "SELECT a FROM t UNION SELECT a + 1 FROM t",
    "SELECT a FROM t INTERSECT SELECT a FROM t WHERE a > 2",
    "SELECT a FROM t EXCEPT SELECT a FROM t WHERE a > 2",
    "SELECT * FROM t WHERE a IN (SELECT a FROM t WHERE b > 'v1')",
    "SELECT a, rank() OVER (PARTITION BY a % 3 ORDER BY a) AS r FROM t",
    "SELECT 'DELETE FROM t; DROP TABLE t' AS s",
    "SELECT a FROM t WHERE b = ';'",
    "SELECT b, count(*) FROM t GROUP BY b HAVING count(*) >= 1 ORDER BY 2 DESC, 1 LIMIT 3",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
    "SELECT * FROM (VALUES (1), (2)) AS v",
    "SELECT upper(b), length(b), substr(b, 1, 2), coalesce(NULL, a) FROM t",
    'SELECT a AS "delete", b AS "read_csv" FROM t',
    "/* leading comment */ SELECT 1",
    "SELECT a FROM t WHERE a < 5 ORDER BY a DESC LIMIT 1 OFFSET 1",
    "SELECT t1.a FROM t AS t1 JOIN t AS t2 ON t1.a = t2.a WHERE t1.b LIKE 'v%' AND t2.b GLOB 'v*'",
]


def make_dbs(folder: Path, rows: int = ROWS) -> dict[str, Target]:
    """A SQLite and a DuckDB file, each with table t(a INTEGER, b TEXT) of ``rows`` rows."""
    folder.mkdir(parents=True, exist_ok=True)
    data = [(i, f"v{i}") for i in range(rows)]
    lite = folder / "db.sqlite"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE t(a INTEGER, b TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", data)
    con.commit()
    con.close()
    duck = folder / "db.duckdb"
    con = duckdb.connect(str(duck))
    con.execute("CREATE TABLE t(a INTEGER, b VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", data)
    con.close()
    return {"sqlite": Target("lite", "sqlite", lite), "duckdb": Target("duck", "duckdb", duck)}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory) -> dict[str, Target]:
    return make_dbs(tmp_path_factory.mktemp("exec"))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql,named", HOSTILE, ids=[f"{i}-{h[1]}" for i, h in enumerate(HOSTILE)])
def test_hostile_sql_is_refused_with_a_reason_naming_it(sql, named, dialect):
    with pytest.raises(UnsafeSQL) as info:
        check_read_only(sql, dialect)
    assert named.lower() in info.value.reason.lower(), info.value.reason
    assert info.value.reason in str(info.value)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", ALLOWED)
def test_allowed_queries_pass_and_run(sql, dialect, dbs):
    statement = check_read_only(sql, dialect)
    assert not statement.endswith(";")
    assert statement.strip() == statement
    result = execute(dbs[dialect], sql)
    assert result.ok, result.error
    assert result.columns


def test_statement_is_returned_as_given_without_trailing_semicolon():
    assert check_read_only("  select  A from t ;; ", "sqlite") == "select  A from t"
    assert check_read_only("SELECT 1; -- done", "duckdb") == "SELECT 1"
    assert check_read_only("SELECT ';' AS s;", "duckdb") == "SELECT ';' AS s"
    assert check_read_only("SELECT 1 FROM t", "snowflake") == "SELECT 1 FROM t"


def test_bad_arguments_are_clear_errors(dbs):
    with pytest.raises(UnsafeSQL, match="empty"):
        check_read_only(None, "sqlite")
    with pytest.raises(DbrouterError, match="unknown SQL dialect"):
        check_read_only("SELECT 1", "klingon")
    with pytest.raises(DbrouterError, match="timeout"):
        execute(dbs["sqlite"], "SELECT 1", timeout=0)
    with pytest.raises(DbrouterError, match="row_cap"):
        execute(dbs["sqlite"], "SELECT 1", row_cap=-1)


WRITES = ["DELETE FROM t", "INSERT INTO t VALUES (9, 'z')", "UPDATE t SET a = 0", "DROP TABLE t",
          "CREATE TABLE u(x INTEGER)", "ALTER TABLE t ADD COLUMN c INTEGER", "VACUUM"]


@pytest.mark.parametrize("kind", DIALECTS)
def test_database_file_is_byte_identical_after_hostile_sql_and_direct_writes(kind, tmp_path):
    target = make_dbs(tmp_path / "dbs", rows=50)[kind]
    before = sha(target.path)
    for sql, _ in HOSTILE:
        with pytest.raises(UnsafeSQL):
            execute(target, sql)
    outside = tmp_path / "outside"
    direct = [*WRITES, f"ATTACH '{outside}.db' AS o", f"COPY t TO '{outside}.csv'", "PRAGMA query_only = OFF",
              "SELECT load_extension('x')"]
    for sql in [*direct, "CHECKPOINT"]:
        if kind == "sqlite":
            result = run_sqlite(target.path, sql, 5.0, 10)
        else:
            result = run_duckdb(target.path, sql, 5.0, 10, require_select=False)
        # DuckDB runs VACUUM and CHECKPOINT on a read-only file as no-ops: the checksum below proves it
        if not (kind == "duckdb" and sql in ("VACUUM", "CHECKPOINT")):
            assert result.error, f"{sql} ran on the {kind} connection"
    assert sha(target.path) == before
    assert not any(tmp_path.glob("outside*"))
    assert execute(target, "SELECT count(*) FROM t").rows == [(50,)]


def test_duckdb_own_parser_must_see_one_select(dbs):
    with pytest.raises(UnsafeSQL, match="DuckDB reads this as 2 statement"):
        run_duckdb(dbs["duckdb"].path, "SELECT 1; DELETE FROM t", 5.0, 10)


@pytest.mark.parametrize("kind", DIALECTS)
def test_timeout_stops_a_runaway_query(kind, dbs):
    sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    start = time.monotonic()
    result = execute(dbs[kind], sql, timeout=0.5)
    assert time.monotonic() - start < 5
    assert result.timed_out and not result.ok
    assert result.error == "SQL execution timed out after 0.5 seconds"
    assert result.rows == [] and result.seconds >= 0.5
    assert format_observation(result) == "[[ERROR: SQL execution timed out after 0.5 seconds]]"


@pytest.mark.parametrize("kind", DIALECTS)
def test_row_cap_and_total_count(kind, dbs):
    result = execute(dbs[kind], "SELECT a, b FROM t ORDER BY a", row_cap=100)
    assert result.ok and result.columns == ["a", "b"]
    assert len(result.rows) == 100 and result.rows[0] == (0, "v0") and result.rows[-1] == (99, "v99")
    assert result.total_rows == ROWS and result.truncated and not result.total_capped
    capped = execute(dbs[kind], "SELECT a FROM t", row_cap=10)
    assert len(capped.rows) == 10 and capped.total_rows == 1000 and capped.total_capped and capped.truncated
    assert format_observation(capped).startswith("[Total rows: 1000+,")
    whole = execute(dbs[kind], "SELECT a FROM t WHERE a < 7")
    assert whole.total_rows == 7 and len(whole.rows) == 7 and not whole.truncated


@pytest.mark.parametrize("kind", DIALECTS)
def test_database_errors_are_returned_verbatim(kind, dbs):
    result = execute(dbs[kind], "SELECT nope FROM t")
    assert not result.ok and not result.timed_out and "nope" in result.error
    assert format_observation(result) == f"[[ERROR: {result.error}]]"
    missing = execute(Target("gone", kind, dbs[kind].path.with_name("gone.db")), "SELECT 1")
    assert "gone.db not found" in missing.error


def test_locked_duckdb_file_says_what_to_do(tmp_path):
    target = make_dbs(tmp_path, rows=3)["duckdb"]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True);"
         " time.sleep(30)", str(target.path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = execute(target, "SELECT count(*) FROM t")
    finally:
        holder.kill()
        holder.wait()
    assert not result.ok and "locked by another process" in result.error and "close that program" in result.error


def test_format_observation():
    rows = [(i, f"name {i}", None if i == 2 else i / 2) for i in range(123)]
    result = QueryResult(["id", "name", "half"], rows[:100], 123, True, 0.0512)
    assert format_observation(result).splitlines() == [
        "[Total rows: 123, Execution time: 0.05s, Top-5 rows are shown below]",
        "id | name | half",
        "-----|-----|-----",
        "0 | name 0 | 0.0",
        "1 | name 1 | 0.5",
        "2 | name 2 | NULL",
        "3 | name 3 | 1.5",
        "4 | name 4 | 2.0",
        "118 rows truncated ...",
    ]
    small = QueryResult(["x"], [("a" * 200,), (b"\x00\xff",)], 2, False, 0.2)
    lines = format_observation(small, max_rows=5).splitlines()
    assert lines[0] == "[Total rows: 2, Execution time: 0.20s, Top-2 rows are shown below]"
    assert lines[3] == "a" * 77 + "..." and lines[4] == "x'00ff'" and len(lines) == 5
    assert format_observation(QueryResult(["x"], [], 0, False, 0.2)) == \
        "[No data found for the specified query, Execution time: 0.20s]"
    assert format_observation(QueryResult(error="no such table: x")) == "[[ERROR: no such table: x]]"
    assert format_observation(QueryResult(["s"], [("a\nb",)], 1)).splitlines()[3] == "a\\nb"


def _result(*rows, columns=("c",)) -> QueryResult:
    return QueryResult(list(columns), list(rows), len(rows))


def test_result_key():
    a, b = _result((1, "x"), (2, "y")), _result((2, "y"), (1, "x"))
    assert result_key(a, ordered=False) == result_key(b, ordered=False)
    assert hash(result_key(a, ordered=False)) == hash(result_key(b, ordered=False))
    assert result_key(a, ordered=True) != result_key(b, ordered=True)
    assert result_key(_result((1,)), False) == result_key(_result((1.0,), columns=("other",)), False)
    assert result_key(_result((0.1 + 0.2,)), False) == result_key(_result((0.3,)), False)
    assert result_key(_result((Decimal("2.50"),)), False) == result_key(_result((2.5,)), False)
    assert result_key(_result((1.5,)), False) != result_key(_result((1.6,)), False)
    assert result_key(_result((12345678901234567,)), False) != result_key(_result((12345678901234568,)), False)
    assert result_key(_result((None,)), False) != result_key(_result((0,)), False)
    assert result_key(_result((None,)), False) != result_key(_result(("",)), False)
    assert result_key(_result((b"1",)), False) != result_key(_result(("1",)), False)
    assert result_key(_result((1,), (1,)), False) != result_key(_result((1,)), False)  # a multiset
    mixed = _result((None,), ("a",), (b"x",), (2,), (1.5,), (float("nan"),))
    assert result_key(mixed, False) == result_key(_result(*reversed(mixed.rows)), False)
    assert result_key(QueryResult(error="boom"), False) is None
    assert result_key(_result(), False) == result_key(_result(), True) == ()


def test_has_order_by():
    assert has_order_by("SELECT a FROM t ORDER BY a", "sqlite")
    assert has_order_by("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", "duckdb")
    assert has_order_by("(SELECT a FROM t ORDER BY a)", "sqlite")
    assert not has_order_by("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", "sqlite")
    assert not has_order_by("SELECT a, rank() OVER (ORDER BY a) FROM t", "duckdb")
    assert not has_order_by("SELECT a FROM t WHERE", "sqlite")
    assert not has_order_by("", "sqlite")


def _fake_kb(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE kb_databases(db_id VARCHAR, source_type VARCHAR, source_path VARCHAR)")
    con.executemany("INSERT INTO kb_databases VALUES (?, ?, ?)", rows)
    return con


def test_target_for_reads_kb_databases(dbs, tmp_path):
    con = _fake_kb([("lite", "sqlite", str(dbs["sqlite"].path)), ("duck", "duckdb", str(dbs["duckdb"].path)),
                    ("schema_only", "schema_json", "schemas/x.json"),
                    ("moved", "sqlite", str(tmp_path / "moved.sqlite"))])
    assert target_for(con, "lite") == Target("lite", "sqlite", dbs["sqlite"].path)
    assert target_for(con, "duck").dialect == "duckdb"
    with pytest.raises(NoDataSource, match="schema file .*without data.*ingest it from its real"):
        target_for(con, "schema_only")
    with pytest.raises(NoDataSource, match="moved.sqlite no longer exists"):
        target_for(con, "moved")
    with pytest.raises(DbrouterError, match="not in the knowledge base; did you mean lite"):
        target_for(con, "lit")


def test_target_for_on_the_demo_kb(kb_con):
    singer = target_for(kb_con, "singer")
    assert singer.kind == "sqlite" and singer.path.is_file()
    assert execute(singer, "SELECT count(*) FROM singer").rows[0][0] > 0
    headphones = target_for(kb_con, "headphone_store")
    assert headphones.kind == "duckdb" and execute(headphones, "SELECT 1 AS one").rows == [(1,)]
    with pytest.raises(NoDataSource, match="college_3"):
        target_for(kb_con, "college_3")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_deep_and_huge_statements_are_refusals_not_crashes(dialect):
    """Issue 22 finding 6: 5,000-deep SQL raised RecursionError out of the check (an `ask`
    traceback); a 1 MB statement spent 86 s in it."""
    with pytest.raises(UnsafeSQL, match="nested too deeply"):
        check_read_only("SELECT " + "(" * 5000 + "1" + ")" * 5000, dialect)
    started = time.monotonic()
    with pytest.raises(UnsafeSQL, match="characters long; at most 200,000"):
        check_read_only("SELECT 1 AS a" + ", 1 AS a" * 130_000, dialect)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("kind", DIALECTS)
def test_result_bytes_are_bounded(kind, dbs):
    """A 200 MB cell became 1.26 GB of memory and 266 MB of output: cells are cut, and the kept
    text of a result is bounded, rows past it counted."""
    from dbrouter.query.results import CELL_CHARS_KEPT, RESULT_BYTES

    big = execute(dbs[kind], "SELECT a, printf('%.3000000c', 'x') AS s FROM t WHERE a < 2" if kind == "sqlite" else
                  "SELECT a, repeat('x', 3000000) AS s FROM t WHERE a < 2")
    assert big.ok and big.total_rows == 2 and len(big.rows) == 2
    assert all(len(r[1]) < CELL_CHARS_KEPT + 30 and r[1].endswith("...[3,000,000 chars]") for r in big.rows)
    wide = execute(dbs[kind], "SELECT a, printf('%.60000c', 'y') FROM t" if kind == "sqlite" else
                   "SELECT a, repeat('y', 60000) FROM t", row_cap=1000)
    kept = sum(len(r[1]) for r in wide.rows)
    assert wide.ok and wide.total_rows == ROWS and wide.truncated
    assert kept + 60_016 >= RESULT_BYTES and kept <= RESULT_BYTES + 60_016 and len(wide.rows) < 1000


def test_duckdb_source_memory_is_bounded_and_nothing_spills_next_to_it(dbs, monkeypatch):
    """DuckDB allowed 80% of RAM (one answer took `ask` to 6.6 GB) and spilled to <file>.tmp."""
    monkeypatch.setenv("DBROUTER_SOURCE_MEMORY_LIMIT", "64MB")
    path = dbs["duckdb"].path
    result = execute(dbs["duckdb"], "SELECT count(*) FROM (SELECT i, repeat('x', 500) AS s FROM range(2000000) r(i) "
                                    "ORDER BY s, i DESC)", timeout=60)
    assert not result.ok and "Out of Memory" in (result.error or "")
    assert not Path(str(path) + ".tmp").exists()
    setting = run_duckdb(path, "SELECT current_setting('memory_limit'), current_setting('temp_directory')", 5, 5)
    assert setting.rows and setting.rows[0][1] == "" and setting.rows[0][0].startswith("6")


def test_a_long_query_draws_no_progress_bar(dbs):
    """DuckDB drew its progress bar into `ask`'s output for any query over 2 s."""
    code = ("import sys\nfrom pathlib import Path\nfrom dbrouter.sources.duckdb import run_duckdb\n"
            "r = run_duckdb(Path(sys.argv[1]), 'SELECT count(DISTINCT (a.range * 31 + b.range) % 50000000) "
            "FROM range(30000) a, range(30000) b', 2.6, 10)\nprint('timed out' if r.timed_out else r.error)")
    proc = subprocess.run([sys.executable, "-c", code, str(dbs["duckdb"].path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.strip() == "timed out", proc.stdout + proc.stderr
    assert "%" not in proc.stdout + proc.stderr and "remaining" not in proc.stdout + proc.stderr


def test_a_giant_sqlite_value_fails_before_it_is_made(dbs):
    """Hardening review: `zeroblob(9e8)` three times took `ask`/`run_sql` to 5.5 GB, the cell cap
    applying only after the row was fetched; SQLite now refuses the value itself."""
    from dbrouter.sources.sqlite import SQLITE_VALUE_BYTES

    giant = execute(dbs["sqlite"], "SELECT zeroblob(900000000), zeroblob(900000000), zeroblob(900000000)")
    assert not giant.ok and "too big" in giant.error
    fits = execute(dbs["sqlite"], f"SELECT length(zeroblob({SQLITE_VALUE_BYTES // 2}))")
    assert fits.ok and fits.rows == [(SQLITE_VALUE_BYTES // 2,)]


@pytest.mark.parametrize("sql", ["SELECT * FROM ts_stat('SELECT 1')", "SELECT my_schema.my_fn(1)",
                                 "SELECT ts_rewrite('a', 'SELECT 1')"])
def test_postgres_sql_calls_only_built_in_read_only_functions(sql):
    """Hardening review: ts_stat/ts_rewrite run SQL written in a string on the server (with
    pg_read_file inside); functions outside a known read-only set are now refused, not only a list
    of dangerous ones (the endpoint's own check passes them to its DuckDB allow-list)."""
    with pytest.raises(UnsafeSQL, match="built-in read-only functions|SQL written in a string"):
        check_read_only(sql, "postgres")
    if "my_fn" in sql:  # the endpoint checks functions against the KB's catalog instead
        check_read_only(sql, "postgres", source=False)
    assert check_read_only("SELECT age(d), string_agg(x, ','), jsonb_array_length(j) FROM t", "postgres")
